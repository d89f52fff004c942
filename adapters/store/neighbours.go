package store

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
)

// Neighbours is what else lives where Worktrack keeps its tables: whether
// the database is PostgreSQL's maintenance database "postgres", and the
// tables of the schema (or SQLite file) its migrations did not make. serve
// warns about both: the tables of a database someone meant for something
// else are easily mistaken, dumped or dropped along with theirs.
type Neighbours struct {
	Maintenance bool
	Tables      []string
}

var createTable = regexp.MustCompile(`(?i)CREATE (VIRTUAL )?(?:TABLE|VIEW) (?:IF NOT EXISTS )?([a-z_][a-z0-9_]*)`)

// fts5Shadows are the tables SQLite makes beside an FTS5 virtual table
// (tasks_fts_data, …).
var fts5Shadows = []string{"_config", "_content", "_data", "_docsize", "_idx"}

// ownTables are the tables and views the migrations of the dialect make (a
// virtual table's shadow tables included), and goose's record of them.
func ownTables(dialect string) ([]string, error) {
	own := []string{"goose_db_version"}
	err := fs.WalkDir(migrations, "migrations/"+dialect, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		sql, err := fs.ReadFile(migrations, path)
		if err != nil {
			return err
		}
		for _, m := range createTable.FindAllStringSubmatch(string(sql), -1) {
			own = append(own, m[2])
			if m[1] != "" {
				for _, suffix := range fts5Shadows {
					own = append(own, m[2]+suffix)
				}
			}
		}
		return nil
	})
	return own, err
}

// Neighbours reads what else lives in the database.
func (db *DB) Neighbours(ctx context.Context) (Neighbours, error) {
	var (
		n      Neighbours
		tables []string
		query  = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
	)
	if db.dialect == DialectPostgres {
		var name string
		if err := db.gorm.WithContext(ctx).Raw("SELECT current_database()").Scan(&name).Error; err != nil {
			return n, fmt.Errorf("store: neighbours: %w", err)
		}
		n.Maintenance = name == "postgres"
		query = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
	}
	if err := db.gorm.WithContext(ctx).Raw(query).Scan(&tables).Error; err != nil {
		return n, fmt.Errorf("store: neighbours: %w", err)
	}
	own, err := ownTables(db.dialect)
	if err != nil {
		return n, fmt.Errorf("store: neighbours: %w", err)
	}
	for _, t := range tables {
		if !slices.Contains(own, t) {
			n.Tables = append(n.Tables, t)
		}
	}
	slices.Sort(n.Tables)
	return n, nil
}
