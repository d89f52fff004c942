// Drives the board page in Debian's Chromium with Playwright, as a user
// would: the browser test of cmd/worktrack (TestDashboardInChromium) runs
// it against a real server, with the page served from another origin.
//
// Environment: DASHBOARD_URL (the page's origin), API_URL, API_KEY (a
// member's key), PROJECT_ID (a project holding the tasks SEEDED names, a
// JSON list of titles), CHROMIUM (default /usr/bin/chromium).
// It prints one JSON line of what it measured and exits non-zero on the
// first failure.
import { chromium } from 'playwright-core';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const page0 = env('DASHBOARD_URL');
const api = env('API_URL');
const key = env('API_KEY');
const project = env('PROJECT_ID');
const seeded = JSON.parse(env('SEEDED'));

async function rest(method, path, body) {
  const res = await fetch(api + path, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body && JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

// The subscription is live on the server once the gauge counts it: a
// task created after that reaches the page (docs/graphql.md#subscriptions).
async function waitSubscribed() {
  for (let i = 0; i < 400; i++) {
    const text = await (await fetch(api + '/metrics')).text();
    const m = text.match(/^worktrack_graphql_subscriptions (\d+)/m);
    if (m && Number(m[1]) >= 1) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('the page never subscribed');
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
const out = {};
try {
  const page = await browser.newPage();
  const problems = [];
  page.on('console', (msg) => { if (msg.type() === 'error') problems.push(msg.text()); });
  page.on('pageerror', (err) => problems.push(String(err)));
  page.on('response', (res) => { if (res.status() >= 400) problems.push(`${res.status()} ${res.request().method()} ${res.url()}`); });
  const graphql = [];
  page.on('request', (req) => {
    if (req.url().startsWith(api + '/graphql')) graphql.push({ method: req.method(), url: req.url() });
  });

  // The user opens the page, types the key, connects.
  await page.goto(`${page0}/?api=${encodeURIComponent(api)}&project=${encodeURIComponent(project)}`);
  await page.fill('#key', key);
  await page.click('#go');
  await page.waitForSelector('#status[data-state="live"]', { timeout: 15000 });

  // The seeded tasks are on the board, each in its status's column.
  for (const title of seeded) {
    await page.waitForSelector(`.column[data-status="OPEN"] .card:has-text("${title}")`, { timeout: 5000 });
  }
  out.cards = await page.locator('.card').count();
  if (out.cards !== seeded.length) throw new Error(`${out.cards} cards, want ${seeded.length}`);

  // A task created over REST appears within a second.
  await waitSubscribed();
  const created = await rest('POST', `/v1/projects/${project}/tasks`, { title: 'Made over REST', status: 'in_progress' });
  const t0 = performance.now();
  await page.waitForSelector(`.column[data-status="IN_PROGRESS"] .card[data-task-id="${created.id}"]`, { timeout: 1000 });
  out.live_ms = Math.round(performance.now() - t0);

  // A move made in the page reaches GET /v1/tasks/{id}.
  const first = await rest('GET', `/v1/projects/${project}/tasks?limit=1`);
  const moved = first.data[0];
  await page.selectOption(`.card[data-task-id="${moved.id}"] select`, 'DONE');
  await page.waitForSelector(`.column[data-status="DONE"] .card[data-task-id="${moved.id}"]`, { timeout: 5000 });
  const after = await rest('GET', `/v1/tasks/${moved.id}`);
  if (after.status !== 'done') throw new Error(`GET /v1/tasks/${moved.id} says ${after.status} after the move`);
  out.moved = moved.id;

  // urql sent its queries as GET and the mutation as POST, all cross-origin.
  const gets = graphql.filter((r) => r.method === 'GET' && new URL(r.url).searchParams.has('query'));
  const posts = graphql.filter((r) => r.method === 'POST');
  if (gets.length < 2) throw new Error(`queries over GET: ${JSON.stringify(graphql)}`);
  if (posts.length !== 1) throw new Error(`mutations over POST: ${JSON.stringify(graphql)}`);
  out.gets = gets.length;
  if (new URL(page0).origin === new URL(api).origin) throw new Error('the page and the API share an origin');
  if (problems.length) throw new Error(`the page logged errors: ${problems.join('; ')}`);
  if (process.env.SCREENSHOT) await page.screenshot({ path: process.env.SCREENSHOT });
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
