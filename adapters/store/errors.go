package store

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/core/domain"
)

// isDuplicate reports a unique violation. TranslateError makes both dialects
// report it as gorm.ErrDuplicatedKey.
func isDuplicate(err error) bool {
	return errors.Is(err, gorm.ErrDuplicatedKey)
}

// alreadyExists is the answer to a unique violation on param.
func alreadyExists(param, format string, args ...any) *domain.Error {
	return &domain.Error{Code: domain.CodeAlreadyExists, Param: param, Message: fmt.Sprintf(format, args...)}
}

// notFoundOr maps gorm's "no row" to resource_not_found of kind and id, and
// wraps anything else.
func notFoundOr(err error, kind, id string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.NotFound(kind, id)
	}
	return fmt.Errorf("store: find %s: %w", kind, err)
}

// errUnavailable is what a client sees when the database cannot be reached.
var errUnavailable = domain.Errorf(domain.CodeUnavailable, "The database is unavailable. Retry shortly.")

// unavailable wraps a lost-connection error so that it reads as
// service_unavailable at the edges while the original stays in the log.
func unavailable(err error) error {
	if err == nil || !isConnectionError(err) {
		return err
	}
	if _, ok := domain.AsError(err); ok {
		return err
	}
	return fmt.Errorf("%w (%w)", errUnavailable, err)
}

func isConnectionError(err error) bool {
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, sql.ErrConnDone), errors.Is(err, driver.ErrBadConn),
		errors.As(err, &netErr), errors.As(err, &connectErr):
		return true
	case errors.As(err, &pgErr):
		return isConnectionLoss(pgErr.Code)
	}
	// database/sql does not export its "database is closed" error.
	return strings.Contains(err.Error(), "sql: database is closed")
}

// isConnectionLoss reports the SQLSTATEs a server sends when it ends or
// refuses a session, not because of the statement: a restart or shutdown
// terminating pooled connections (57P01 admin_shutdown, 57P02
// crash_shutdown), a server still starting (57P03 cannot_connect_now), and
// class 08, connection exceptions. The statement did not run; the client
// should retry shortly, as for a connection that cannot be opened.
func isConnectionLoss(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03":
		return true
	}
	return strings.HasPrefix(code, "08")
}

// registerUnavailable makes every statement report a lost connection as
// service_unavailable, whichever repository issued it.
func registerUnavailable(g *gorm.DB) error {
	mark := func(tx *gorm.DB) {
		if tx.Error != nil && isConnectionError(tx.Error) {
			tx.Error = unavailable(tx.Error)
		}
	}
	cb := g.Callback()
	for name, p := range map[string]interface {
		Register(string, func(*gorm.DB)) error
	}{
		"create": cb.Create().After("*"), "query": cb.Query().After("*"), "update": cb.Update().After("*"),
		"delete": cb.Delete().After("*"), "row": cb.Row().After("*"), "raw": cb.Raw().After("*"),
	} {
		if err := p.Register("worktrack:unavailable:"+name, mark); err != nil {
			return err
		}
	}
	return nil
}
