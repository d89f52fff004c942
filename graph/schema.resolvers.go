package graph

import (
	"context"
	"encoding/json"

	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/model"
)

func (r *auditActorResolver) UserID(ctx context.Context, obj *domain.AuditActor) (*string, error) {
	return optionalID(obj.UserID), nil
}

func (r *auditActorResolver) APIKeyID(ctx context.Context, obj *domain.AuditActor) (*string, error) {
	return optionalID(obj.APIKeyID), nil
}

func (r *auditActorResolver) IP(ctx context.Context, obj *domain.AuditActor) (*string, error) {
	return optionalID(obj.IP), nil
}

func (r *auditActorResolver) UserAgent(ctx context.Context, obj *domain.AuditActor) (*string, error) {
	return optionalID(obj.UserAgent), nil
}

func (r *auditEventResolver) Changes(ctx context.Context, obj *domain.AuditEvent) (json.RawMessage, error) {
	return json.Marshal(obj.Changes)
}

func (r *auditEventResolver) RequestID(ctx context.Context, obj *domain.AuditEvent) (*string, error) {
	return optionalID(obj.RequestID), nil
}

func (r *auditEventResolver) Seq(ctx context.Context, obj *domain.AuditEvent) (int, error) {
	return int(obj.Seq), nil
}

func (r *eventResolver) ProjectID(ctx context.Context, obj *domain.LoggedEvent) (*string, error) {
	if obj.ProjectID == "" {
		return nil, nil
	}
	return &obj.ProjectID, nil
}

func (r *eventResolver) Task(ctx context.Context, obj *domain.LoggedEvent) (*model.Task, error) {
	t, err := eventTask(obj)
	if t == nil || err != nil {
		return nil, err
	}
	return oneTask(ctx, *t), nil
}

func (r *eventResolver) Project(ctx context.Context, obj *domain.LoggedEvent) (*domain.Project, error) {
	return eventProject(obj)
}

func (r *eventResolver) Webhook(ctx context.Context, obj *domain.LoggedEvent) (*domain.Webhook, error) {
	return eventWebhook(obj)
}

func (r *eventResolver) PreviousAttributes(ctx context.Context, obj *domain.LoggedEvent) (json.RawMessage, error) {
	return previousAttributes(obj)
}

func (r *eventResolver) Payload(ctx context.Context, obj *domain.LoggedEvent) (json.RawMessage, error) {
	return obj.Payload, nil
}

func (r *mutationResolver) CreateProject(ctx context.Context, input model.CreateProjectInput) (*domain.Project, error) {
	p, err := r.App.Projects.Create(ctx, actor(ctx), createProjectFields(input))
	if err != nil {
		return nil, err
	}
	loadersOf(ctx).forget()
	return &p, nil
}

func (r *mutationResolver) UpdateProject(ctx context.Context, id string, input model.UpdateProjectInput) (*domain.Project, error) {
	p, err := r.App.Projects.Update(ctx, actor(ctx), id, projectPatch(input))
	if err != nil {
		return nil, err
	}
	loadersOf(ctx).forget()
	return &p, nil
}

func (r *mutationResolver) CreateTask(ctx context.Context, projectID *string, input model.CreateTaskInput) (*model.Task, error) {
	t, err := r.App.Tasks.Create(ctx, actor(ctx), deref(projectID), createTaskFields(input))
	if err != nil {
		return nil, err
	}
	loadersOf(ctx).forget()
	return oneTask(ctx, t), nil
}

func (r *mutationResolver) CreateTasks(ctx context.Context, projectID string, inputs []model.CreateTaskInput) ([]model.Task, error) {
	ins := make([]domain.TaskFields, len(inputs))
	for i, in := range inputs {
		ins[i] = createTaskFields(in)
	}
	ts, err := r.App.Tasks.CreateMany(ctx, actor(ctx), projectID, ins)
	if err != nil {
		return nil, err
	}
	loadersOf(ctx).forget()
	return loadersOf(ctx).tasks(ctx, ts, selectedTaskRefs(ctx)), nil
}

func (r *mutationResolver) UpdateTask(ctx context.Context, id string, input model.UpdateTaskInput) (*model.Task, error) {
	t, err := r.App.Tasks.Update(ctx, actor(ctx), id, taskPatch(input))
	if err != nil {
		return nil, err
	}
	loadersOf(ctx).forget()
	return oneTask(ctx, t), nil
}

func (r *mutationResolver) DeleteTask(ctx context.Context, id string) (*string, error) {
	if err := r.App.Tasks.Delete(ctx, actor(ctx), id); err != nil {
		return nil, err
	}
	loadersOf(ctx).forget()
	return &id, nil
}

func (r *mutationResolver) CreateWebhook(ctx context.Context, input model.CreateWebhookInput) (*model.WebhookWithSecret, error) {
	in, err := createWebhookFields(input)
	if err != nil {
		return nil, err
	}
	w, err := r.App.Webhooks.Create(ctx, actor(ctx), in)
	if err != nil {
		return nil, err
	}
	return withSecret(w), nil
}

func (r *mutationResolver) UpdateWebhook(ctx context.Context, id string, input model.UpdateWebhookInput) (*domain.Webhook, error) {
	patch, err := webhookPatch(input)
	if err != nil {
		return nil, err
	}
	w, err := r.App.Webhooks.Update(ctx, actor(ctx), id, patch)
	if err != nil {
		return nil, err
	}
	return &w, nil
}

func (r *mutationResolver) DeleteWebhook(ctx context.Context, id string) (*string, error) {
	if err := r.App.Webhooks.Delete(ctx, actor(ctx), id); err != nil {
		return nil, err
	}
	return &id, nil
}

func (r *mutationResolver) RotateWebhookSecret(ctx context.Context, id string, previousSecretExpiresIn *int) (*model.WebhookWithSecret, error) {
	w, err := r.App.Webhooks.RotateSecret(ctx, actor(ctx), id, optionalInt(previousSecretExpiresIn))
	if err != nil {
		return nil, err
	}
	return withSecret(w), nil
}

func (r *mutationResolver) PingWebhook(ctx context.Context, id string) (*string, error) {
	d, err := r.App.Webhooks.Ping(ctx, actor(ctx), id)
	if err != nil {
		return nil, err
	}
	return &d.ID, nil
}

func (r *mutationResolver) CreateAPIKey(ctx context.Context, input model.CreateAPIKeyInput) (*model.APIKeyWithSecret, error) {
	k, secret, err := r.App.APIKeys.Create(ctx, actor(ctx), createAPIKeyFields(input))
	if err != nil {
		return nil, err
	}
	return &model.APIKeyWithSecret{APIKey: &k, Secret: secret}, nil
}

func (r *mutationResolver) UpdateAPIKey(ctx context.Context, id string, input model.UpdateAPIKeyInput) (*domain.APIKey, error) {
	k, err := r.App.APIKeys.Update(ctx, actor(ctx), id, domain.APIKeyFields{Name: field(input.Name)})
	if err != nil {
		return nil, err
	}
	return &k, nil
}

func (r *mutationResolver) RevokeAPIKey(ctx context.Context, id string) (*domain.APIKey, error) {
	k, err := r.App.APIKeys.Revoke(ctx, actor(ctx), id)
	if err != nil {
		return nil, err
	}
	return &k, nil
}

func (r *projectResolver) Tasks(ctx context.Context, obj *domain.Project, first *int, after *string, status *domain.Status, assigneeID *string, filter *model.TaskFilter, orderBy *model.TaskOrder) (*model.TaskConnection, error) {
	l := loadersOf(ctx)
	q, err := projectTaskQuery(status, assigneeID, filter, orderBy)
	if err != nil {
		return nil, err // named with GraphQL's argument names already
	}
	args := newTaskPageArgs(pageRequest(first, after), q, selectsTaskAssignee(ctx))
	page, err := l.taskPage(ctx, taskPageKey{projectID: obj.ID, args: args})
	if err != nil {
		var renames map[string]string
		if assigneeID != nil {
			renames = map[string]string{domain.ParamAssigneeID: "assigneeId"}
		}
		return nil, withFilterParams(err, renames)
	}
	// The project is not primed from obj: under an event obj is the project
	// as the event recorded it, and its tasks' project is the current one.
	// Projects read by Query.projects and Query.project are primed there.
	return l.taskConnection(ctx, page, taskRefs{assignee: args.withAssignees}), nil
}

func (r *queryResolver) Me(ctx context.Context) (*domain.User, error) {
	u, err := r.App.Users.Me(ctx, actor(ctx))
	if err != nil {
		return nil, err
	}
	return &u, nil
}

func (r *queryResolver) Users(ctx context.Context, first *int, after *string) (*model.UserConnection, error) {
	page, err := r.App.Users.List(ctx, actor(ctx), pageRequest(first, after))
	if err != nil {
		return nil, err
	}
	return userConnection(page), nil
}

func (r *queryResolver) Projects(ctx context.Context, first *int, after *string) (*model.ProjectConnection, error) {
	page, err := r.App.Projects.List(ctx, actor(ctx), pageRequest(first, after))
	if err != nil {
		return nil, err
	}
	l := loadersOf(ctx)
	l.primeProjects(page.Items...)
	l.listed(page.Items)
	return projectConnection(page), nil
}

func (r *queryResolver) Project(ctx context.Context, id string) (*domain.Project, error) {
	p, err := r.App.Projects.Get(ctx, actor(ctx), id)
	if err != nil {
		return nil, err
	}
	l := loadersOf(ctx)
	l.primeProjects(p)
	l.listed([]domain.Project{p})
	return &p, nil
}

func (r *queryResolver) Task(ctx context.Context, id string) (*model.Task, error) {
	t, err := r.App.Tasks.Get(ctx, actor(ctx), id)
	if err != nil {
		return nil, err
	}
	return oneTask(ctx, t), nil
}

func (r *queryResolver) Tasks(ctx context.Context, first *int, after *string, filter *model.TaskFilter, orderBy *model.TaskOrder) (*model.TaskConnection, error) {
	page, err := r.App.Tasks.List(ctx, actor(ctx), app.TaskListRequest{Query: taskQuery(filter, orderBy), Page: pageRequest(first, after)})
	if err != nil {
		return nil, withFilterParams(err, nil)
	}
	queue := taskRefs{project: selectsTaskProject(ctx), assignee: selectsTaskAssignee(ctx)}
	return loadersOf(ctx).taskConnection(ctx, page, queue), nil
}

func (r *queryResolver) TaskCounts(ctx context.Context, filter *model.TaskFilter, groupBy domain.TaskCountGroup) (*domain.TaskCounts, error) {
	counts, err := r.App.Tasks.Count(ctx, actor(ctx), taskQuery(filter, nil), groupBy)
	if err != nil {
		return nil, withFilterParams(err, nil)
	}
	return &counts, nil
}

func (r *queryResolver) Webhooks(ctx context.Context, first *int, after *string) (*model.WebhookConnection, error) {
	page, err := r.App.Webhooks.List(ctx, actor(ctx), pageRequest(first, after))
	if err != nil {
		return nil, err
	}
	return webhookConnection(page), nil
}

func (r *queryResolver) Webhook(ctx context.Context, id string) (*domain.Webhook, error) {
	w, err := r.App.Webhooks.Get(ctx, actor(ctx), id)
	if err != nil {
		return nil, err
	}
	return &w, nil
}

func (r *queryResolver) Events(ctx context.Context, first *int, after *string, types []domain.EventType, projectID *string) (*model.EventConnection, error) {
	req := app.EventListRequest{Page: pageRequest(first, after), ProjectID: projectID}
	for _, t := range types {
		req.Types = append(req.Types, string(t))
	}
	page, err := r.App.Events.List(ctx, actor(ctx), req)
	if err != nil {
		return nil, err
	}
	return eventConnection(page), nil
}

func (r *queryResolver) APIKeys(ctx context.Context, first *int, after *string, userID *string) (*model.APIKeyConnection, error) {
	page, err := r.App.APIKeys.List(ctx, actor(ctx), userID, pageRequest(first, after))
	if err != nil {
		return nil, err
	}
	return apiKeyConnection(page), nil
}

func (r *queryResolver) AuditEvents(ctx context.Context, first *int, after *string, filter *model.AuditEventFilter) (*model.AuditEventConnection, error) {
	page, err := r.App.Audit.List(ctx, actor(ctx), auditListRequest(first, after, filter))
	if err != nil {
		return nil, auditError(err)
	}
	return auditEventConnection(page), nil
}

func (r *queryResolver) Node(ctx context.Context, id string) (model.Node, error) {
	return r.node(ctx, id)
}

func (r *subscriptionResolver) Events(ctx context.Context, types []domain.EventType, projectID *string, after *string) (<-chan *domain.LoggedEvent, error) {
	return subscribeEvents(ctx, r.App, types, projectID, after), nil
}

func (r *webhookResolver) DisabledReason(ctx context.Context, obj *domain.Webhook) (*domain.DisabledReason, error) {
	if obj.DisabledReason == "" {
		return nil, nil
	}
	return &obj.DisabledReason, nil
}

func (r *Resolver) AuditActor() AuditActorResolver { return &auditActorResolver{r} }

func (r *Resolver) AuditEvent() AuditEventResolver { return &auditEventResolver{r} }

func (r *Resolver) Event() EventResolver { return &eventResolver{r} }

func (r *Resolver) Mutation() MutationResolver { return &mutationResolver{r} }

func (r *Resolver) Project() ProjectResolver { return &projectResolver{r} }

func (r *Resolver) Query() QueryResolver { return &queryResolver{r} }

func (r *Resolver) Subscription() SubscriptionResolver { return &subscriptionResolver{r} }

func (r *Resolver) Webhook() WebhookResolver { return &webhookResolver{r} }

type (
	auditActorResolver   struct{ *Resolver }
	auditEventResolver   struct{ *Resolver }
	eventResolver        struct{ *Resolver }
	mutationResolver     struct{ *Resolver }
	projectResolver      struct{ *Resolver }
	queryResolver        struct{ *Resolver }
	subscriptionResolver struct{ *Resolver }
	webhookResolver      struct{ *Resolver }
)
