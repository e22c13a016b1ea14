/**
 * What a reader of readers.ts is: a schema's validator (validate.ts) typed by
 * the type generated from the same schema (records.ts).
 */

/**
 * A validator compiled by Ajv: `errors` says why the last value failed.
 */
export type Validate = ((data: unknown) => boolean) & {
  errors?: ReadonlyArray<{ instancePath: string; message?: string }> | null;
};

/**
 * Reads a value the server sent: the value when it matches its schema, typed,
 * else `null`.
 */
export interface IReader<T> {
  (value: unknown): T | null;
  /**
   * The type read (the schema's title).
   */
  readonly title: string;
  /**
   * Why `value` does not match (the first place it breaks), or `null` when
   * it does.
   */
  problem(value: unknown): string | null;
}

export function reader<T>(validate: Validate, title: string): IReader<T> {
  const read = (value: unknown): T | null =>
    validate(value) ? (value as T) : null;
  const problem = (value: unknown): string | null => {
    if (validate(value)) {
      return null;
    }
    const first = validate.errors?.[0];
    return first
      ? `${title}${first.instancePath || ''}: ${first.message ?? 'invalid'}`
      : `${title}: invalid`;
  };
  return Object.assign(read, { title, problem });
}
