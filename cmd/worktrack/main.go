// Command worktrack serves the Worktrack REST and GraphQL APIs and runs the
// operator's sub-commands (migrations, workspaces, users, API keys).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/cmd/worktrack/wiring"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

func main() {
	runtime.MemProfileRate = memProfileRate(os.Getenv, runtime.MemProfileRate)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		if !errors.Is(err, errReported) {
			fmt.Fprintln(stderr, "worktrack: "+oneLine(err))
		}
		return 1
	}
	return 0
}

func oneLine(err error) string {
	if e, ok := domain.AsError(err); ok {
		msg := string(e.Code) + ": " + e.Message
		if e.Param != "" {
			msg += " (" + e.Param + ")"
		}
		return msg
	}
	return err.Error()
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "worktrack",
		Short:         "Worktrack: projects, tasks, members and webhooks over REST and GraphQL",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       currentBuild().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	// An operator's command is recorded in the audit log with what it was
	// and who ran it.
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		cmd.SetContext(ports.WithRequestInfo(cmd.Context(), operatorInfo(cmd)))
	}
	root.AddCommand(serveCmd(stderr), migrateCmd(stdout), workspaceCmd(stdout), userCmd(stdout), keyCmd(stdout), secretsCmd(stdout),
		auditCmd(stdout), exportCmd(stdout, stderr), importCmd(stdout, stderr), versionCmd(stdout))
	return root
}

// openStore opens and migrates the configured database.
func openStore(ctx context.Context, cfg Config, opts ...store.Option) (*store.DB, []int64, error) {
	db, err := store.Open(ctx, cfg.DatabaseURL, append([]store.Option{store.WithSecrets(cfg.Secrets)}, opts...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	applied, err := db.Migrate(ctx)
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("DATABASE_URL: migrating: %w", err)
	}
	return db, applied, nil
}

// newApp wires the core to the store; log is where the live feed reports
// its failures (nil: slog.Default()).
func newApp(db *store.DB, cfg Config, log *slog.Logger) *app.App {
	return wiring.App(db, wiring.Core{
		AllowPrivateWebhooks: cfg.WebhookAllowPrivate,
		Live:                 app.LiveOptions{Logger: log},
	})
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func migrateCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending schema migrations, then exit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			db, applied, err := openStore(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer db.Close()
			return printJSON(stdout, map[string][]int64{"applied": applied})
		},
	}
}
