-- wrk script for the load harness (tools/load): GET a random path per request.
-- PATHS names a file with one path per line; TOKEN, when set, is sent as
-- Authorization: Bearer. Prints one RESULT line that the harness parses.
local paths = {}
for line in io.lines(os.getenv("PATHS")) do
  if #line > 0 then paths[#paths + 1] = line end
end
local tok = os.getenv("TOKEN")
if tok and #tok > 0 then wrk.headers["Authorization"] = "Bearer " .. tok end
local origin = os.getenv("ORIGIN")
if origin and #origin > 0 then wrk.headers["Origin"] = origin end
local seeded = false
request = function()
  if not seeded then math.randomseed(os.time() + math.floor(os.clock() * 1e6)); seeded = true end
  return wrk.format("GET", paths[math.random(#paths)])
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT req/s=%.1f p50=%.3fms p90=%.3fms p99=%.3fms max=%.3fms n=%d errors(status/other)=%d/%d\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, summary.requests, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
