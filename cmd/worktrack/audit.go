package main

import (
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/ports"
)

// operatorInfo is what the audit log keeps of an operator's command: the
// command itself and who ran it where, as its user agent
// (docs/audit.md#actors).
func operatorInfo(cmd *cobra.Command) ports.RequestInfo {
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	if host, err := os.Hostname(); err == nil {
		who += "@" + host
	}
	return ports.RequestInfo{UserAgent: fmt.Sprintf("%s (%s; %s)", cmd.CommandPath(), currentBuild().Version, who)}
}

// auditVerifyJSON is what `audit verify` prints.
type auditVerifyJSON struct {
	OK         bool           `json:"ok"`
	Workspaces int            `json:"workspaces"`
	Records    int64          `json:"records"`
	Break      *auditBreakOut `json:"break"`
}

type auditBreakOut struct {
	WorkspaceID string `json:"workspace_id"`
	ID          string `json:"id"`
	Seq         int64  `json:"seq"`
	Reason      string `json:"reason"`
}

func auditCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Check the audit log"}
	var workspace string
	verify := &cobra.Command{
		Use:   "verify [--workspace wsp_…]",
		Short: "Check every workspace's audit chain (or one's), and name the first record that does not hold",
		Long: "Reads each workspace's audit records in chain order and checks that each one's hash matches its\n" +
			"contents and follows the record before it. Prints {\"ok\":true,…} and exits 0, or names the first\n" +
			"record that does not hold (changed, missing, or removed from the end) and exits 1.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withApp(cmd.Context(), func(a *app.App) error {
				rep, err := a.Audit.Verify(cmd.Context(), strings.TrimSpace(workspace))
				if err != nil {
					return err
				}
				out := auditVerifyJSON{OK: rep.Break == nil, Workspaces: rep.Workspaces, Records: rep.Records}
				if b := rep.Break; b != nil {
					out.Break = &auditBreakOut{WorkspaceID: b.WorkspaceID, ID: b.ID, Seq: b.Seq, Reason: b.Reason}
				}
				if err := printJSON(stdout, out); err != nil {
					return err
				}
				if rep.Break != nil {
					return fmt.Errorf("%w: %s", errAuditBroken, rep.Break.String())
				}
				return nil
			})
		},
	}
	verify.Flags().StringVar(&workspace, "workspace", "", "check only this workspace's chain")
	cmd.AddCommand(verify)
	return cmd
}

// errAuditBroken: a chain does not hold.
var errAuditBroken = fmt.Errorf("the audit log does not verify")
