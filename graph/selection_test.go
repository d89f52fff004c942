package graph

import (
	"reflect"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/codegen/templates"
	"github.com/vektah/gqlparser/v2/ast"
)

// The look-ahead reads schema names as strings: each must name a field of
// the schema, and the item types must be what the connections hold, so that
// a rename in schema.graphql fails here rather than turn the look-ahead off.
func TestLookAheadNamesAreInTheSchema(t *testing.T) {
	schema := NewSchema(nil).Schema()
	for _, tf := range lookAheadFields {
		def := schema.Types[tf[0]]
		if def == nil {
			t.Errorf("schema.graphql has no type %s", tf[0])
			continue
		}
		if def.Fields.ForName(tf[1]) == nil {
			t.Errorf("schema.graphql has no field %s.%s", tf[0], tf[1])
		}
	}
	if got := schema.Types[typeTaskConnection].Fields.ForName(fieldNodes).Type.Elem.NamedType; got != typeTask {
		t.Errorf("%s.%s holds %s, not %s", typeTaskConnection, fieldNodes, got, typeTask)
	}
	if got := schema.Types[typeTaskConnection].Fields.ForName(fieldEdges).Type.Elem.NamedType; got != typeTaskEdge {
		t.Errorf("%s.%s holds %s, not %s", typeTaskConnection, fieldEdges, got, typeTaskEdge)
	}
	if got := schema.Types[typeTaskEdge].Fields.ForName(fieldNode).Type.NamedType; got != typeTask {
		t.Errorf("%s.%s is %s, not %s", typeTaskEdge, fieldNode, got, typeTask)
	}
	implements := false
	for _, i := range schema.Types[typeTask].Interfaces {
		implements = implements || i == typeNode
	}
	if !implements {
		t.Errorf("%s does not implement %s", typeTask, typeNode)
	}
}

// Every field whose value is a connection is weighed by the page it asks
// for (Complexity): a connection added to the schema without its weight
// would let one operation fetch a hundred times what the limit admits.
func TestEveryConnectionIsWeighed(t *testing.T) {
	schema := NewSchema(nil).Schema()
	weights := reflect.ValueOf(Complexity())
	checked := 0
	for _, typ := range schema.Types {
		if typ.BuiltIn || (typ.Kind != ast.Object && typ.Kind != ast.Interface) {
			continue
		}
		for _, f := range typ.Fields {
			if !strings.HasSuffix(f.Type.Name(), "Connection") {
				continue
			}
			checked++
			fields := weights.FieldByName(typ.Name)
			if !fields.IsValid() {
				t.Errorf("%s.%s is a connection, but its type has no complexity functions", typ.Name, f.Name)
				continue
			}
			fn := fields.FieldByName(templates.ToGo(f.Name))
			if !fn.IsValid() || fn.IsNil() {
				t.Errorf("%s.%s is a connection without a weight in Complexity()", typ.Name, f.Name)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("found %d connections; the test would check nothing", checked)
	}
}
