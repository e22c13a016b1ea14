import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';

import { createNamed, openPanel } from './helpers';

/*
 * Every open notebook follows its kernel's live events, however many are
 * open: they all come over the page's one event bus WebSocket (JupyterLab's
 * EventManager). Five notebooks run a cell each at once, one notebook shown:
 * each cell gets its step and its scored prediction. After a reload the
 * five follow their kernels again.
 */

const LIVE = { timeout: 60000 };
const NOTEBOOKS = [1, 2, 3, 4, 5].map(i => `live-${i}.ipynb`);
/** Seconds a cell runs: long enough for all five to be running at once. */
const RUNS = 4;

// The kernels must outlive a reload, as a user's do (see history.spec.ts).
test.use({
  viewport: { width: 1280, height: 1000 },
  kernels: null,
  sessions: null
});
test.afterEach(async ({ page }) => {
  await page.kernel.shutdownAll();
});

/** The code of notebook `i`'s cell in `round`: a name to find it by. */
function code(i: number, round: number): string {
  return `import time; time.sleep(${RUNS}); nb${i}_round${round} = ${i}`;
}

/**
 * The badge of the cell that defines `nb{i}_round{round}`, in whichever
 * notebook holds it, shown or not.
 */
function badge(page: IJupyterLabPageFixture, i: number, round: number) {
  return page
    .locator('.jp-Cell', { hasText: `nb${i}_round${round}` })
    .locator('.themisto-CellMarker');
}

/**
 * Run a cell in every notebook at once, as its Run button would (the cell's
 * id goes with the request), without making any of them active and without
 * waiting: five notebooks at work, one shown.
 */
async function runInEach(
  page: IJupyterLabPageFixture,
  round: number
): Promise<void> {
  const codes = NOTEBOOKS.map((_, i) => code(i, round));
  await expect
    .poll(
      () =>
        page.evaluate(
          names =>
            names.every(name =>
              Array.from(window.jupyterapp.shell.widgets('main')).some(w =>
                (
                  w as unknown as { context?: { path: string } }
                ).context?.path.endsWith(name)
              )
            ),
          NOTEBOOKS
        ),
      LIVE
    )
    .toBe(true); // every notebook is back (after a reload)
  await page.evaluate(
    async ({ names, codes }) => {
      interface IPanel {
        context?: { path: string };
        sessionContext: {
          ready: Promise<void>;
          session: {
            kernel: {
              requestExecute(
                content: { code: string },
                disposeOnDone: boolean,
                metadata: Record<string, unknown>
              ): unknown;
            };
          };
        };
        content: {
          model: {
            sharedModel: {
              cells: Array<{
                id: string;
                getSource(): string;
                setSource(s: string): void;
              }>;
              insertCell(
                index: number,
                cell: { cell_type: string; source: string }
              ): { id: string };
            };
          };
        };
      }
      const panels = Array.from(
        window.jupyterapp.shell.widgets('main')
      ) as unknown as IPanel[];
      for (const [i, name] of names.entries()) {
        const panel = panels.find(w => w.context?.path.endsWith(name))!;
        await panel.sessionContext.ready;
        const shared = panel.content.model.sharedModel;
        const last = shared.cells[shared.cells.length - 1];
        let id: string;
        if (last.getSource() === '') {
          last.setSource(codes[i]);
          id = last.id;
        } else {
          id = shared.insertCell(shared.cells.length, {
            cell_type: 'code',
            source: codes[i]
          }).id;
        }
        panel.sessionContext.session.kernel.requestExecute(
          { code: codes[i] },
          true,
          { cellId: id }
        );
      }
    },
    { names: NOTEBOOKS, codes }
  );
}

/**
 * Wait for each notebook's cell of `round` to show its step, later than
 * `after` (the notebook's previous step), with its prediction scored; the
 * steps shown, by notebook.
 */
async function expectScoredInEach(
  page: IJupyterLabPageFixture,
  round: number,
  after: number[] = []
): Promise<number[]> {
  const steps: number[] = [];
  for (const i of NOTEBOOKS.keys()) {
    const marker = badge(page, i, round);
    await expect(marker).toHaveAttribute('data-state', 'scored', LIVE);
    const step = Number(await marker.getAttribute('data-themisto-step'));
    expect(step).toBeGreaterThan(after[i] ?? 0);
    steps.push(step);
  }
  return steps;
}

test.describe('Themisto live events', () => {
  test('five notebooks open at once all get live events, and again after a reload', async ({
    page,
    tmpPath
  }) => {
    test.setTimeout(300000);
    for (const name of NOTEBOOKS) {
      await createNamed(page, tmpPath, name);
    }
    const panel = await openPanel(page);
    await runInEach(page, 1);
    // The first notebooks' cells end while the last one is active.
    await expect(page.locator('.jp-NotebookPanel:visible')).toHaveCount(1);
    const first = await expectScoredInEach(page, 1);
    // The active notebook's panel shows its step and its scored prediction.
    await expect(panel.locator('.themisto-Header-steps')).toHaveAttribute(
      'data-steps',
      `${first[NOTEBOOKS.length - 1]}`,
      LIVE
    );
    await expect(panel.locator('.themisto-Header-connection')).toHaveAttribute(
      'data-connection',
      'open'
    );
    for (const name of NOTEBOOKS) {
      await page.notebook.activate(name);
      await page.notebook.save();
    }

    // A reload: every notebook comes back with its kernel, reads what it
    // had, and follows its kernel's events again.
    await page.reload({ waitForIsReady: false });
    await page.locator('.jp-NotebookPanel:visible').first().waitFor(LIVE);
    for (const name of NOTEBOOKS) {
      if (!(await page.notebook.isOpen(name))) {
        await page.notebook.open(name);
      }
    }
    for (const i of NOTEBOOKS.keys()) {
      await expect(badge(page, i, 1)).toHaveAttribute(
        'data-themisto-step',
        `${first[i]}`,
        LIVE
      );
    }
    await runInEach(page, 2);
    await expectScoredInEach(page, 2, first);
  });
});
