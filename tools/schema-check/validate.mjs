// Validates the GraphQL schema with graphql-js, the reference
// implementation: `node validate.mjs SCHEMA.graphql [INTROSPECTION.json]`.
//
// The schema file must build (buildSchema) and pass validateSchema. When an
// introspection result of the running server is given (what
// graph/schema_test.go fetches through the real handler), the schema it
// describes must be the file's: no breaking or dangerous change either way.
import { readFileSync } from 'node:fs';
import {
  buildClientSchema,
  buildSchema,
  findBreakingChanges,
  findDangerousChanges,
  validateSchema,
} from 'graphql';

const [schemaPath, introspectionPath] = process.argv.slice(2);
if (!schemaPath) {
  console.error('usage: node validate.mjs SCHEMA.graphql [INTROSPECTION.json]');
  process.exit(2);
}

function fail(what, errors) {
  console.error(`${what}:`);
  for (const e of errors) console.error(`  - ${e.message ?? e.description ?? e}`);
  process.exit(1);
}

let schema;
try {
  schema = buildSchema(readFileSync(schemaPath, 'utf8'));
} catch (e) {
  fail(`${schemaPath} does not build`, [e]);
}
const errors = validateSchema(schema);
if (errors.length > 0) fail(`${schemaPath} is not a valid schema`, errors);

if (introspectionPath) {
  const result = JSON.parse(readFileSync(introspectionPath, 'utf8'));
  const served = buildClientSchema(result.data ?? result);
  const servedErrors = validateSchema(served);
  if (servedErrors.length > 0) fail('the introspected schema is not valid', servedErrors);
  // The server adds what every gqlgen server has: built-in directives
  // (@defer, newer locations of @deprecated) and all standard scalars (Float,
  // unused here). Those are not the schema's; its types and fields are.
  const standardScalars = new Set(['Int', 'Float', 'String', 'Boolean', 'ID']);
  const ours = (c) =>
    !c.type.startsWith('DIRECTIVE_') &&
    !(c.type === 'TYPE_REMOVED' && [...standardScalars].some((s) => c.description.startsWith(`Standard scalar ${s} `)));
  const changes = [
    ...findBreakingChanges(schema, served),
    ...findDangerousChanges(schema, served),
    ...findBreakingChanges(served, schema),
    ...findDangerousChanges(served, schema),
  ].filter(ours);
  if (changes.length > 0) fail(`the served schema differs from ${schemaPath}`, changes);
}

const types = Object.keys(schema.getTypeMap()).filter((n) => !n.startsWith('__'));
console.log(`${schemaPath}: valid (graphql-js ${(await import('graphql')).version}, ${types.length} types)`);
