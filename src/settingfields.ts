/**
 * How the settings editor draws "Predictors to show" and "Contexts to
 * show": a titled list of check boxes, one per choice the server offers
 * (settingschema.ts fills the choices). JupyterLab's form draws an array of
 * choices as an untitled multiple-select list (its field template titles
 * only single values), and a list of free text with its description twice;
 * this field draws the title and the boxes, the template the description
 * once.
 */
import type { FieldProps } from '@rjsf/utils';
import { createElement, type ReactElement } from 'react';

/**
 * A field of an array of strings whose `items.enum` are the choices.
 */
export function ChoiceListField(props: FieldProps): ReactElement {
  const { schema, formData, onChange, idSchema, disabled, readonly } = props;
  const items = (schema.items ?? {}) as { enum?: unknown[] };
  const chosen: string[] = Array.isArray(formData)
    ? formData.filter((v): v is string => typeof v === 'string')
    : [];
  const choices = (Array.isArray(items.enum) ? items.enum : []).filter(
    (v): v is string => typeof v === 'string'
  );
  const offered = [...choices, ...chosen.filter(v => !choices.includes(v))];
  const toggle = (value: string, on: boolean): void => {
    const next = on
      ? [...chosen.filter(v => v !== value), value]
      : chosen.filter(v => v !== value);
    // In the order offered, so the file reads as the editor shows it.
    onChange(offered.filter(v => next.includes(v)));
  };
  const id = idSchema.$id;
  return createElement(
    'div',
    { className: 'themisto-ChoiceList', 'data-field': props.name },
    createElement(
      'h3',
      { className: 'jp-FormGroup-fieldLabel jp-FormGroup-contentItem' },
      schema.title ?? props.name
    ),
    offered.length === 0
      ? createElement(
          'div',
          { className: 'jp-FormGroup-description' },
          'The server offers no choices.'
        )
      : offered.map(value =>
          createElement(
            'label',
            { key: value, className: 'themisto-ChoiceList-item' },
            createElement('input', {
              type: 'checkbox',
              id: `${id}-${value}`,
              checked: chosen.includes(value),
              disabled: disabled || readonly,
              onChange: (event: { target: { checked: boolean } }) =>
                toggle(value, event.target.checked)
            }),
            ` ${value}`
          )
        )
  );
}
