/**
 * What the generators of scripts/gen-records.mjs agree on about the schema
 * files themselves.
 */

/**
 * Whether a schema file only holds `$defs` (api.schema.json: the REST API's
 * replies), with no record of its own at its root.
 */
export function isContainer(schema) {
  return !['type', 'properties', 'oneOf', 'anyOf', 'allOf', '$ref'].some(
    key => key in schema
  );
}
