package store

import (
	"gorm.io/gorm"

	"github.com/worktrack/worktrack/core/domain"
)

// page narrows q to the rows after position after in (created_at, id) order
// and takes limit of them. The row-value comparison is a range scan of the
// (…, created_at, id) index on both dialects, so a deep page costs what the
// first one does.
func page(q *gorm.DB, after *domain.Position, limit int) *gorm.DB {
	if after != nil {
		q = q.Where("(created_at, id) > (?, ?)", Time(after.At), after.ID)
	}
	q = q.Order("created_at, id")
	if limit > 0 {
		q = q.Limit(limit)
	}
	return q
}
