/**
 * A tiny DOM builder for the panel (no framework: the panel redraws small
 * sections on its own schedule).
 */

/**
 * Attributes: `class`, `data-*`, `title`, ARIA and other string attributes;
 * `false`/`undefined` leave an attribute out.
 */
export type Attrs = Record<string, string | number | boolean | undefined>;

/**
 * Children: nodes or text; `null`/`false` are skipped.
 */
export type Child = Node | string | null | false | undefined;

/**
 * Create an HTML element.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * Create an SVG element.
 */
export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG_NS, tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

/**
 * A button calling `onClick`.
 */
export function button(
  label: string,
  onClick: () => void,
  attrs: Attrs = {}
): HTMLButtonElement {
  const extra = attrs.class ? ` ${attrs.class}` : '';
  const node = h(
    'button',
    { type: 'button', ...attrs, class: `themisto-Button${extra}` },
    label
  );
  node.addEventListener('click', onClick);
  return node;
}

function setAttrs(node: Element, attrs: Attrs): void {
  for (const [name, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== false) {
      node.setAttribute(name, value === true ? '' : String(value));
    }
  }
}

function append(node: Element, children: Child[]): void {
  for (const child of children) {
    if (child !== null && child !== false && child !== undefined) {
      node.append(child);
    }
  }
}
