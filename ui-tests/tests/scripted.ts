/**
 * Replies and live events that a test scripts in place of the server's are
 * checked against the JSON Schemas first, by the same generated readers the
 * front end uses (src/api/readers.ts): a scripted server that drifts from the
 * real one fails its test here, instead of testing a front end against
 * something the server never sends.
 */
import { expect } from '@playwright/test';

import type { IReader } from '../../src/api/reader';

export * from '../../src/api/readers';

/**
 * What scripted replies broke their schema (a route handler cannot fail its
 * test by throwing: `expectNoDrift` fails it after the fact).
 */
const problems: string[] = [];

/**
 * `body` as a JSON route reply, after checking it against `read`'s schema.
 */
export function reply<T>(
  read: IReader<T>,
  body: unknown,
  status = 200
): { status: number; contentType: string; body: string } {
  const problem = read.problem(body);
  if (problem) {
    problems.push(problem);
  }
  return { status, contentType: 'application/json', body: JSON.stringify(body) };
}

/**
 * `value`, after checking it against `read`'s schema (in a test's own code,
 * where a failed expectation fails the test at once).
 */
export function checked<T>(read: IReader<T>, value: unknown): unknown {
  expect(read.problem(value), 'a scripted value breaks its schema').toBeNull();
  return value;
}

/**
 * Fail the test when a scripted reply broke its schema.
 */
export function expectNoDrift(): void {
  expect(problems.splice(0), 'scripted replies that break their schema').toEqual(
    []
  );
}
