import { LabIcon } from '@jupyterlab/ui-components';

import themistoSvg from '../style/icons/themisto.svg';

/**
 * The Themisto icon (a line of scores): the prediction panel's tab.
 */
export const themistoIcon = new LabIcon({
  name: 'themisto-ext:icon',
  svgstr: themistoSvg
});
