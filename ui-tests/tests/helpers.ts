import { IJupyterLabPageFixture } from '@jupyterlab/galata';
import { Locator, TestInfo } from '@playwright/test';

export const PANEL = '#themisto-prediction-panel';

/**
 * Open the prediction panel from the Themisto main menu.
 */
export async function openPanel(
  page: IJupyterLabPageFixture
): Promise<Locator> {
  await page.menu.clickMenuItem('Themisto>Open Prediction Panel');
  const panel = page.locator(PANEL);
  await panel.waitFor({ state: 'visible' });
  return panel;
}

/**
 * The source of a cell of the active notebook, read from its model.
 */
export function cellSource(
  page: IJupyterLabPageFixture,
  index: number
): Promise<string> {
  return page.evaluate(i => {
    const widget = window.jupyterapp.shell.currentWidget as unknown as {
      content: {
        widgets: Array<{
          model: { sharedModel: { getSource(): string } };
        }>;
      };
    };
    return widget.content.widgets[i].model.sharedModel.getSource();
  }, index);
}

/**
 * The model id of a cell of the active notebook (the steps' `cell_id`).
 */
export function cellId(
  page: IJupyterLabPageFixture,
  index: number
): Promise<string> {
  return page.evaluate(i => {
    const widget = window.jupyterapp.shell.currentWidget as unknown as {
      content: { widgets: Array<{ model: { id: string } }> };
    };
    return widget.content.widgets[i].model.id;
  }, index);
}

/**
 * Run `shoot` in the light theme, then in the dark one; the light theme is
 * set back at the end.
 */
async function inThemes(
  page: IJupyterLabPageFixture,
  shoot: (theme: 'light' | 'dark') => Promise<void>
): Promise<void> {
  for (const theme of ['light', 'dark'] as const) {
    if (theme === 'dark') {
      await page.theme.setDarkTheme();
    } else {
      await page.theme.setLightTheme();
    }
    await shoot(theme);
  }
  await page.theme.setLightTheme();
}

/**
 * Screenshots of the panel in the light and dark themes, kept as test
 * artefacts (attached to the report and written to the test's output
 * folder under ui-tests/test-results).
 */
export async function screenshotThemes(
  page: IJupyterLabPageFixture,
  panel: Locator,
  testInfo: TestInfo,
  name: string
): Promise<void> {
  await inThemes(page, async theme => {
    const path = testInfo.outputPath(`${name}-${theme}.png`);
    await panel.screenshot({ path, animations: 'disabled' });
    await testInfo.attach(`${name}-${theme}`, {
      path,
      contentType: 'image/png'
    });
  });
}

/**
 * Screenshots of the page (its viewport, or its region `clip`) in the light and
 * dark themes, written to `directory` as `{name}-light.png` and
 * `{name}-dark.png` (the documentation's tour). The paths written, light first.
 */
export async function screenshotThemesTo(
  page: IJupyterLabPageFixture,
  directory: string,
  name: string,
  clip?: { x: number; y: number; width: number; height: number }
): Promise<string[]> {
  const written: string[] = [];
  await inThemes(page, async theme => {
    const path = `${directory}/${name}-${theme}.png`;
    // No caret in the pictures: it blinks.
    await page.screenshot({ path, animations: 'disabled', caret: 'hide', clip });
    written.push(path);
  });
  return written;
}

/**
 * Create a notebook under its final name and open it (its kernel starts from
 * its metadata). `createNew` makes an Untitled notebook and renames it while
 * its kernel starts; JupyterLab may then keep the kernel's session under the
 * old name, and a reload of the page starts another kernel.
 */
export async function createNamed(
  page: IJupyterLabPageFixture,
  directory: string,
  name: string,
  options: { sources?: string[]; nbformatMinor?: number } = {}
): Promise<void> {
  const minor = options.nbformatMinor ?? 5;
  const notebook = {
    // nbformat < 4.5 has no cell ids (JupyterLab makes new ones at each load).
    cells: (options.sources ?? ['']).map((source, i) => ({
      cell_type: 'code',
      ...(minor >= 5 ? { id: i === 0 ? 'first' : `cell-${i}` } : {}),
      source,
      metadata: {},
      outputs: [],
      execution_count: null
    })),
    metadata: {
      kernelspec: {
        name: 'python3',
        display_name: 'Python 3 (ipykernel)',
        language: 'python'
      }
    },
    nbformat: 4,
    nbformat_minor: minor
  };
  const path = `${directory}/${name}`;
  await page.contents.uploadContent(JSON.stringify(notebook), 'text', path);
  await page.notebook.openByPath(path);
  await page.notebook.activate(name);
  // The shown notebook's indicator: other open notebooks have theirs, hidden.
  await page
    .locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]:visible')
    .first()
    .waitFor();
}
