// Verifies webhook requests with the standardwebhooks npm package, the
// Standard Webhooks reference library for JavaScript, as a receiver would.
//
// stdin: a JSON array of {"secret": "whsec_…", "headers": {name: value},
// "body": "<raw body>"}; stdout: a JSON array, one {"ok": true} or
// {"ok": false, "error": "…"} per request, in order. The library's own
// five-minute timestamp tolerance applies.
import { Webhook } from "standardwebhooks";

let input = "";
for await (const chunk of process.stdin) {
  input += chunk;
}
const results = JSON.parse(input).map(({ secret, headers, body }) => {
  try {
    new Webhook(secret).verify(body, headers);
    return { ok: true };
  } catch (e) {
    return { ok: false, error: String(e && e.message ? e.message : e) };
  }
});
process.stdout.write(JSON.stringify(results) + "\n");
