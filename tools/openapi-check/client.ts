// What a client team's first step looks like: types generated from the
// document by openapi-typescript (make openapi-check writes them to
// generated/worktrack.d.ts), used in code that must typecheck.
import type { paths, components } from "./generated/worktrack";

type Task = components["schemas"]["Task"];
type TaskPage = paths["/v1/projects/{projectId}/tasks"]["get"]["responses"][200]["content"]["application/json"];
type CreateTask = NonNullable<paths["/v1/projects/{projectId}/tasks"]["post"]["requestBody"]>["content"]["application/json"];
type ApiError = components["schemas"]["Error"];

export function titles(page: TaskPage): string[] {
  return page.data.map((t: Task) => `${t.title} (${t.status}, due ${t.due_at ?? "never"})`);
}

export const draft: CreateTask = { title: "Write the announcement", status: "in_progress", assignee_id: null };

export function describe(e: ApiError): string {
  return `${e.error.code}: ${e.error.message}${e.error.param ? ` (${e.error.param})` : ""} [${e.error.request_id}]`;
}

export function nextCursor(page: TaskPage): string | null {
  return page.pagination.has_more ? page.pagination.next_cursor : null;
}
