// A task board on Worktrack's GraphQL API, as a dashboard on its own origin
// builds one: urql for queries (sent as GET, urql's default) and mutations
// (POST), graphql-ws for the live feed. The API must allow this page's
// origin: WORKTRACK_CORS_ORIGINS=http://localhost:9097 (docs/graphql.md).
//
// The API key is typed into the page and kept in sessionStorage for the
// tab's life only: never put a key in a page's source or its URL.
import { Client, fetchExchange, gql, subscriptionExchange } from '@urql/core';
import { createClient as createWSClient } from 'graphql-ws';

const STATUSES = ['OPEN', 'IN_PROGRESS', 'DONE', 'ARCHIVED'];
const LABELS = { OPEN: 'Open', IN_PROGRESS: 'In progress', DONE: 'Done', ARCHIVED: 'Archived' };
// The moves the API allows: an archived task can only be reopened.
const MOVES = {
  OPEN: ['IN_PROGRESS', 'DONE', 'ARCHIVED'],
  IN_PROGRESS: ['OPEN', 'DONE', 'ARCHIVED'],
  DONE: ['OPEN', 'IN_PROGRESS', 'ARCHIVED'],
  ARCHIVED: ['OPEN'],
};

const PROJECTS = gql`
  query Projects {
    projects(first: 100) { nodes { id key name } }
  }
`;
const BOARD = gql`
  query Board($id: ID!, $after: String) {
    project(id: $id) {
      id
      name
      tasks(first: 100, after: $after) {
        nodes { id title status updatedAt }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
`;
const MOVE = gql`
  mutation MoveTask($id: ID!, $status: TaskStatus!) {
    updateTask(id: $id, input: { status: $status }) { id title status updatedAt }
  }
`;
const LIVE = gql`
  subscription Live($projectId: ID) {
    events(projectId: $projectId) { id type task { id title status updatedAt } }
  }
`;

const $ = (sel) => document.querySelector(sel);
const tasks = new Map(); // id -> task as last seen
let session = null; // { client, ws, live }

function setStatus(state, text) {
  const el = $('#status');
  el.dataset.state = state;
  el.textContent = text;
}

// put shows t unless the board already holds a newer state of it (an event
// may overtake the first page, or the reverse).
function put(t) {
  const seen = tasks.get(t.id);
  if (seen && seen.updatedAt > t.updatedAt) return;
  tasks.set(t.id, t);
  render(t);
}

function remove(id) {
  tasks.delete(id);
  document.querySelector(`.card[data-task-id="${CSS.escape(id)}"]`)?.remove();
}

function render(t) {
  let card = document.querySelector(`.card[data-task-id="${CSS.escape(t.id)}"]`);
  if (!card) {
    card = document.createElement('li');
    card.className = 'card';
    card.dataset.taskId = t.id;
    card.innerHTML = '<span class="title"></span><select class="move" aria-label="Move to"></select>';
    card.querySelector('select').addEventListener('change', (ev) => move(t.id, ev.target.value));
  }
  card.dataset.status = t.status;
  card.querySelector('.title').textContent = t.title;
  const select = card.querySelector('select');
  select.replaceChildren(new Option('Move to…', ''), ...MOVES[t.status].map((s) => new Option(LABELS[s], s)));
  const column = document.querySelector(`.column[data-status="${t.status}"] ul`);
  if (card.parentElement !== column) column.append(card);
}

async function move(id, status) {
  if (!status) return;
  const res = await session.client.mutation(MOVE, { id, status }).toPromise();
  if (res.error) {
    setStatus('error', `Move failed: ${res.error.message}`);
    const t = tasks.get(id);
    if (t) render(t);
    return;
  }
  put(res.data.updateTask);
}

function connect(api, key) {
  const ws = createWSClient({
    url: api.replace(/^http/, 'ws') + '/graphql',
    connectionParams: { authorization: `Bearer ${key}` },
    retryAttempts: Infinity,
    shouldRetry: () => true,
  });
  const client = new Client({
    url: `${api}/graphql`,
    requestPolicy: 'network-only',
    fetchOptions: () => ({ headers: { authorization: `Bearer ${key}` } }),
    exchanges: [
      subscriptionExchange({
        forwardSubscription(request) {
          const input = { ...request, query: request.query || '' };
          return { subscribe: (sink) => ({ unsubscribe: ws.subscribe(input, sink) }) };
        },
      }),
      fetchExchange,
    ],
  });
  return { client, ws, live: null };
}

async function loadProjects(project) {
  const res = await session.client.query(PROJECTS, {}).toPromise();
  if (res.error) throw res.error;
  const select = $('#project');
  select.replaceChildren(...res.data.projects.nodes.map((p) => new Option(`${p.key} · ${p.name}`, p.id)));
  if (project) select.value = project;
  return select.value;
}

async function loadBoard(projectId) {
  session.live?.unsubscribe();
  tasks.clear();
  document.querySelectorAll('.card').forEach((c) => c.remove());
  if (!projectId) return;

  // Subscribe first, so that nothing committed while the first page loads
  // is missed; put() keeps the newer of the two states of a task.
  session.live = session.client.subscription(LIVE, { projectId }).subscribe((res) => {
    if (res.error) {
      setStatus('error', `Live updates stopped: ${res.error.message}`);
      return;
    }
    const e = res.data.events;
    if (!e.task) return;
    if (e.type === 'TASK_DELETED') remove(e.task.id);
    else put(e.task);
    setStatus('live', `Live · last event ${e.id}`);
  });

  let after = null;
  for (;;) {
    const res = await session.client.query(BOARD, { id: projectId, after }).toPromise();
    if (res.error) throw res.error;
    res.data.project.tasks.nodes.forEach(put);
    const page = res.data.project.tasks.pageInfo;
    if (!page.hasNextPage) break;
    after = page.endCursor;
  }
  setStatus('live', `Live · ${tasks.size} tasks in ${document.querySelector('#project option:checked')?.textContent ?? projectId}`);
}

async function start(api, key, project) {
  session?.live?.unsubscribe();
  session?.ws.dispose();
  session = connect(api, key);
  setStatus('connecting', 'Connecting…');
  try {
    await loadBoard(await loadProjects(project));
  } catch (err) {
    setStatus('error', String(err.message ?? err));
  }
}

const params = new URLSearchParams(location.search);
$('#api').value = params.get('api') ?? sessionStorage.getItem('worktrack.api') ?? 'http://127.0.0.1:8080';
$('#key').value = sessionStorage.getItem('worktrack.key') ?? '';

$('#connect').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const api = $('#api').value.replace(/\/+$/, '');
  const key = $('#key').value.trim();
  sessionStorage.setItem('worktrack.api', api);
  sessionStorage.setItem('worktrack.key', key);
  start(api, key, $('#project').value || params.get('project'));
});
$('#project').addEventListener('change', (ev) => {
  setStatus('connecting', 'Loading…');
  loadBoard(ev.target.value).catch((err) => setStatus('error', String(err.message ?? err)));
});

if ($('#key').value) $('#connect').requestSubmit();
