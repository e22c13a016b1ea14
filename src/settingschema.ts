/**
 * The prediction settings' schema as the settings editor shows it, filled
 * from the server: "Predictors to show" offers the predictors this server
 * runs (an enum, ticked rather than typed), and "Contexts to show" the
 * contexts it predicts with. The schema file keeps the open forms (any
 * predictor name) so that settings written for another server stay valid.
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */
import type { PredictorsInfo } from './api/records';

type Json = { [key: string]: any }; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * `schema` (a copy) with the server's predictors and contexts as the enums
 * of the two lists; the lists' own descriptions say what is offered. A
 * value already set that the server does not run stays selectable.
 */
export function withServerChoices(
  schema: Json,
  info: PredictorsInfo,
  chosen: { predictors?: unknown; contexts?: unknown } = {}
): Json {
  const copy = JSON.parse(JSON.stringify(schema)) as Json;
  const properties = (copy.properties ?? {}) as Record<string, Json>;
  const offer = (name: 'predictors' | 'contexts', values: string[]): void => {
    const field = properties[name];
    if (!field) {
      return;
    }
    const kept = Array.isArray(chosen[name])
      ? (chosen[name] as unknown[]).filter(
          (v): v is string => typeof v === 'string'
        )
      : [];
    const all = [...new Set([...values, ...kept])];
    if (all.length === 0) {
      return;
    }
    field.items = { type: 'string', enum: all };
  };
  offer('predictors', info.predictors);
  offer('contexts', info.contexts);
  return copy;
}
