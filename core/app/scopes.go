package app

// The list scopes name the lists that cursors are issued for
// (domain.EncodeCursor): a cursor of one list, or of one filter of a list, is
// refused by every other. They are exported, as TaskListScope is, so that
// GraphQL can give each edge of a connection its own cursor: the cursor of an
// item is the next_cursor of a page that ends at that item, so REST and
// GraphQL cursors are interchangeable.

// UserListScope names the member list of a workspace.
func UserListScope(workspaceID string) string { return "users:" + workspaceID }

// ProjectListScope names the project list of a workspace.
func ProjectListScope(workspaceID string) string { return "projects:" + workspaceID }

// WebhookListScope names the webhook list of a workspace.
func WebhookListScope(workspaceID string) string { return "webhooks:" + workspaceID }
