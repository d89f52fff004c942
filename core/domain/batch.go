package domain

import (
	"fmt"
	"strings"
)

// MaxBatchItems is the most tasks one bulk creation takes
// (docs/api.md#creating-tasks-in-bulk).
const MaxBatchItems = 500

// ParamItems is the core's name for the list of a bulk request. Each API
// names it as its clients know it (REST's body member tasks, GraphQL's
// argument inputs) with NameItems.
const ParamItems = "items"

// CheckBatchSize refuses a bulk request of no item or of more than
// MaxBatchItems.
func CheckBatchSize(n int) error {
	if n < 1 || n > MaxBatchItems {
		return Invalid(ParamItems, "Give 1 to %d tasks; %d were given.", MaxBatchItems, n)
	}
	return nil
}

// AtItem places a validation error of one item of a bulk request at its
// index: param title of the fourth item becomes items[3].title, and an
// error about the item as a whole (no param) items[3]. Other errors are
// returned as they are.
func AtItem(i int, err error) error {
	e, ok := AsError(err)
	if !ok || e.Code != CodeValidationFailed {
		return err
	}
	param := fmt.Sprintf("%s[%d]", ParamItems, i)
	if e.Param != "" {
		param += "." + e.Param
	}
	return &Error{Code: e.Code, Message: e.Message, Param: param, Limit: e.Limit}
}

// NameItems renames the core's items param (items, items[3].title) to an
// API's name for the list (tasks[3].title); any other param is left as it is.
func NameItems(param, name string) string {
	if param == ParamItems || strings.HasPrefix(param, ParamItems+"[") {
		return name + strings.TrimPrefix(param, ParamItems)
	}
	return param
}
