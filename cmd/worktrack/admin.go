package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// withApp runs fn against a migrated database and the core services.
func withApp(ctx context.Context, fn func(a *app.App) error) error {
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	db, _, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(newApp(db, cfg, nil))
}

type workspaceJSON struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Name      string `json:"name"`
	CreatedAt string `json:"created_at"`
}

// keyJSON is an API key as the CLI prints it: the API's ApiKey object, with
// its secret at creation.
func keyJSON(k domain.APIKey, secret string) any {
	if secret != "" {
		return wire.APIKeyWithSecret{APIKey: wire.FromAPIKey(k), Secret: secret}
	}
	return wire.FromAPIKey(k)
}

func workspaceCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "workspace", Short: "Manage workspaces"}
	var name string
	create := &cobra.Command{
		Use:   "create --name NAME",
		Short: "Create a workspace",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withApp(cmd.Context(), func(a *app.App) error {
				w, err := a.Admin.CreateWorkspace(cmd.Context(), name)
				if err != nil {
					return err
				}
				return printJSON(stdout, workspaceJSON{ID: w.ID, Object: "workspace", Name: w.Name, CreatedAt: wire.Time(w.CreatedAt)})
			})
		},
	}
	create.Flags().StringVar(&name, "name", "", "workspace name (required)")
	_ = create.MarkFlagRequired("name")
	list := &cobra.Command{
		Use:   "list",
		Short: "List every workspace, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withApp(cmd.Context(), func(a *app.App) error {
				ws, err := a.Admin.ListWorkspaces(cmd.Context())
				if err != nil {
					return err
				}
				out := wire.List[workspaceJSON]{Object: "list", Data: []workspaceJSON{}}
				for _, w := range ws {
					out.Data = append(out.Data, workspaceJSON{ID: w.ID, Object: "workspace", Name: w.Name, CreatedAt: wire.Time(w.CreatedAt)})
				}
				return printJSON(stdout, out)
			})
		},
	}
	cmd.AddCommand(create, list)
	return cmd
}

func userCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Manage users"}
	var ws, email, name, role string
	create := &cobra.Command{
		Use:   "create --workspace WSP --email E --name N --role admin|member|guest",
		Short: "Add a user to a workspace",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := domain.ParseRole("role", role)
			if err != nil {
				return err
			}
			return withApp(cmd.Context(), func(a *app.App) error {
				u, err := a.Admin.CreateUser(cmd.Context(), ws, email, name, r)
				if err != nil {
					return err
				}
				return printJSON(stdout, wire.FromUser(u))
			})
		},
	}
	create.Flags().StringVar(&ws, "workspace", "", "workspace id, wsp_… (required)")
	create.Flags().StringVar(&email, "email", "", "email (required)")
	create.Flags().StringVar(&name, "name", "", "display name (required)")
	create.Flags().StringVar(&role, "role", "", "admin, member or guest (required)")
	for _, f := range []string{"workspace", "email", "name", "role"} {
		_ = create.MarkFlagRequired(f)
	}
	var listWS string
	list := &cobra.Command{
		Use:   "list --workspace WSP",
		Short: "List a workspace's users, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withApp(cmd.Context(), func(a *app.App) error {
				users, err := a.Admin.ListUsers(cmd.Context(), listWS)
				if err != nil {
					return err
				}
				out := wire.List[wire.User]{Object: "list", Data: []wire.User{}}
				for _, u := range users {
					out.Data = append(out.Data, wire.FromUser(u))
				}
				return printJSON(stdout, out)
			})
		},
	}
	list.Flags().StringVar(&listWS, "workspace", "", "workspace id, wsp_… (required; `worktrack workspace list` shows them)")
	_ = list.MarkFlagRequired("workspace")
	cmd.AddCommand(create, list, userUpdateCmd(stdout))
	return cmd
}

// userUpdateCmd changes a user's role; every key of theirs may do at once
// only what the new role allows.
func userUpdateCmd(stdout io.Writer) *cobra.Command {
	var role string
	update := &cobra.Command{
		Use:   "update USR --role admin|member|guest",
		Short: "Change a user's role; their keys follow it within 5 seconds on every server",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := domain.ParseRole("role", role)
			if err != nil {
				return err
			}
			return withApp(cmd.Context(), func(a *app.App) error {
				u, err := a.Admin.SetRole(cmd.Context(), args[0], r)
				if err != nil {
					return err
				}
				return printJSON(stdout, wire.FromUser(u))
			})
		},
	}
	update.Flags().StringVar(&role, "role", "", "admin, member or guest (required)")
	_ = update.MarkFlagRequired("role")
	return update
}

func keyCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "key", Short: "Manage API keys"}

	var user, email, workspace, name string
	var scopes, projects []string
	var expiresIn time.Duration
	create := &cobra.Command{
		Use:   "create (--user USR | --email E [--workspace WSP]) [--name LABEL] [--scopes S,…] [--projects PRJ,…] [--expires-in 720h]",
		Short: "Create an API key; its secret is printed once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withApp(cmd.Context(), func(a *app.App) error {
				if email != "" {
					u, err := a.Admin.UserByEmail(cmd.Context(), email, workspace)
					if err != nil {
						return err
					}
					user = u.ID
				}
				k, secret, err := a.Admin.CreateKey(cmd.Context(), user, cliKeyFields(name, scopes, projects, expiresIn))
				if err != nil {
					return err
				}
				return printJSON(stdout, keyJSON(k, secret))
			})
		},
	}
	create.Flags().StringVar(&user, "user", "", "user id, usr_…")
	create.Flags().StringVar(&email, "email", "", "the user's email, instead of --user")
	create.Flags().StringVar(&workspace, "workspace", "", "with --email: the user's workspace, when several have that email")
	create.Flags().StringVar(&name, "name", "", "a label for the key (default: cli)")
	create.Flags().StringSliceVar(&scopes, "scopes", nil, "what the key may do, e.g. tasks:read,tasks:write (default: *, all its user may; docs/keys.md)")
	create.Flags().StringSliceVar(&projects, "projects", nil, "the only projects the key sees, prj_…,prj_… (default: all)")
	create.Flags().DurationVar(&expiresIn, "expires-in", 0, "lifetime, e.g. 720h (default: never expires)")
	create.MarkFlagsOneRequired("user", "email")
	create.MarkFlagsMutuallyExclusive("user", "email")

	var listUser string
	list := &cobra.Command{
		Use:   "list --user USR",
		Short: "List a user's keys (without secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withApp(cmd.Context(), func(a *app.App) error {
				keys, err := a.Admin.ListKeys(cmd.Context(), listUser)
				if err != nil {
					return err
				}
				out := wire.List[wire.APIKey]{Object: "list", Data: []wire.APIKey{}}
				for _, k := range keys {
					out.Data = append(out.Data, wire.FromAPIKey(k))
				}
				return printJSON(stdout, out)
			})
		},
	}
	list.Flags().StringVar(&listUser, "user", "", "user id, usr_… (required)")
	_ = list.MarkFlagRequired("user")

	revoke := &cobra.Command{
		Use:   "revoke KEY_ID",
		Short: "Revoke a key; every server stops accepting it within 10 seconds",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withApp(cmd.Context(), func(a *app.App) error {
				k, err := a.Admin.RevokeKey(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return printJSON(stdout, keyJSON(k, ""))
			})
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// cliKeyFields are the fields of a key made by `key create`.
func cliKeyFields(name string, scopes, projects []string, expiresIn time.Duration) domain.APIKeyFields {
	if name == "" {
		name = "cli"
	}
	in := domain.APIKeyFields{Name: domain.Set(name)}
	if len(scopes) > 0 {
		in.Scopes = domain.Set(scopes)
	}
	if len(projects) > 0 {
		in.ProjectIDs = domain.Set(projects)
	}
	if expiresIn < 0 {
		in.ExpiresAt = domain.Set(time.Time{}) // refused: not in the future
	} else if expiresIn > 0 {
		in.ExpiresAt = domain.Set(time.Now().Add(expiresIn))
	}
	return in
}
