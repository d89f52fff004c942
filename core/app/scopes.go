package app

import (
	"fmt"

	"github.com/worktrack/worktrack/core/domain"
)

// The list scopes name the lists that cursors are issued for
// (domain.EncodeCursor): a cursor of one list, or of one filter of a list, is
// refused by every other. Only the services know them: a page carries its
// scope, and domain.Page.Cursor gives each item's cursor, so no edge
// rebuilds one and REST and GraphQL cursors stay interchangeable.

func userListScope(workspaceID string) string { return "users:" + workspaceID }

func projectListScope(workspaceID string) string { return "projects:" + workspaceID }

func webhookListScope(workspaceID string) string { return "webhooks:" + workspaceID }

// apiKeyListScope names the keys of a workspace, or of one of its users.
func apiKeyListScope(workspaceID string, userID *string) string {
	if userID == nil {
		return "api_keys:" + workspaceID
	}
	return "api_keys:" + workspaceID + ":user=" + *userID
}

// taskListScope names a task list: one project's ("" for every project's)
// with its filters and order in canonical form, so that a cursor issued for
// one is refused by any other. A project's list filtered as it could be
// before lists took more filters (one status, one assignee, oldest first)
// keeps the name it had then, so that cursors issued before still read on.
func taskListScope(workspaceID, projectID string, q domain.TaskQuery) string {
	legacy := projectID != "" && len(q.Statuses) <= 1 && len(q.AssigneeIDs) <= 1 && !q.Unassigned &&
		q.DueAfter == nil && q.DueBefore == nil && q.UpdatedAfter == nil && q.Text == nil &&
		(q.Order == domain.TaskOrder{} || q.Order == domain.TaskOrder{Field: domain.TaskOrderCreatedAt})
	if !legacy {
		return fmt.Sprintf("tasks:%s:%s:%s", workspaceID, projectID, q.Canonical())
	}
	status, assignee := "*", "*"
	if len(q.Statuses) == 1 {
		status = string(q.Statuses[0])
	}
	if len(q.AssigneeIDs) == 1 {
		assignee = q.AssigneeIDs[0]
	}
	return fmt.Sprintf("tasks:%s:%s:status=%s:assignee=%s", workspaceID, projectID, status, assignee)
}

func deliveryListScope(workspaceID, webhookID string, status *domain.DeliveryStatus) string {
	st := "*"
	if status != nil {
		st = string(*status)
	}
	return fmt.Sprintf("deliveries:%s:%s:status=%s", workspaceID, webhookID, st)
}
