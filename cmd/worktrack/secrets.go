package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/worktrack/worktrack/adapters/secretbox"
)

// secretsCmd holds the operator's commands on secrets at rest
// (docs/operations.md#secrets-at-rest).
func secretsCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "secrets", Short: "Manage the encryption of stored secrets"}
	reencrypt := &cobra.Command{
		Use:   "reencrypt",
		Short: "Rewrite every stored secret under the first key of " + secretbox.EnvKey,
		Long: "Rewrites every stored webhook signing secret, and every idempotency replay, that is not encrypted\n" +
			"under the first key of " + secretbox.EnvKey + " (plaintext ones included). Idempotent, and safe while\n" +
			"servers serve. Rotate a key: prepend the new one, restart the servers, run this, then drop the old key.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			if !cfg.Secrets.Enabled() {
				return &configError{secretbox.EnvKey, "is not set: there is no key to encrypt with (make one with: openssl rand -base64 32)"}
			}
			db, _, err := openStore(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer db.Close()
			rep, err := db.ReencryptSecrets(cmd.Context())
			if err != nil {
				return err
			}
			return printJSON(stdout, rep)
		},
	}
	cmd.AddCommand(reencrypt)
	return cmd
}
