/**
 * Small helpers over Lumino's virtual DOM for the panel's views: a button,
 * and attributes that may be absent (the virtual DOM writes every attribute
 * it is given, so `disabled: 'false'` would disable).
 */
import { type ElementAttrs, h, type VirtualElement } from '@lumino/virtualdom';

/**
 * Attributes without their `undefined` and `false` entries; `true` is an
 * empty (present) attribute.
 */
export function attrs(
  all: Record<string, string | number | boolean | undefined>
): ElementAttrs {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(all)) {
    if (value !== undefined && value !== false) {
      out[name] = value === true ? '' : String(value);
    }
  }
  return out as ElementAttrs;
}

/**
 * A button calling `onClick`.
 */
export function button(
  label: string,
  onClick: () => void,
  extra: Record<string, string | boolean | undefined> = {}
): VirtualElement {
  const { className, ...rest } = extra;
  return h.button(
    {
      ...attrs({ type: 'button', ...rest }),
      className: `themisto-Button${className ? ` ${className}` : ''}`,
      onclick: onClick
    },
    label
  );
}
