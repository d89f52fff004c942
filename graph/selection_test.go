package graph

import "testing"

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
