import { expect, test } from '@jupyterlab/galata';

/**
 * The class view, as a reader of everyone's trajectories opens it: the
 * roster lists two other users' notebooks (seeded by
 * jupyter_server_test_config.py), sorts, filters, and a drill-down replays
 * one student's notebook read-only in the prediction panel.
 */
test.describe('The class view', () => {
  // Galata answers every URL ending in /api/me with a made-up user, ours
  // (/themisto/api/me) included: the page must reach the server.
  test.use({ mockUser: false });

  test('lists two users’ notebooks and drills into one', async ({ page }) => {
    await page.menu.clickMenuItem('Themisto>Open Class View');
    const rows = page.locator('.themisto-ClassView-row');
    await expect(
      rows.filter({ has: page.locator('td', { hasText: 'alice' }) })
    ).toHaveCount(1, {
      timeout: 15000
    });
    await expect(
      page.locator('.themisto-ClassView-row[data-user="alice"]')
    ).toHaveAttribute('data-notebook', 'class/lab1.ipynb');
    await expect(
      page.locator('.themisto-ClassView-row[data-user="bob"]')
    ).toHaveAttribute('data-notebook', 'class/lab2.ipynb');
    await expect(
      page.locator('.themisto-ClassView-row[data-user="alice"] td[data-cells]')
    ).toHaveText('5');

    // Sorted by cells run, most first: alice (5, two sessions) before bob (2).
    await page.locator('th[data-sort="cells"]').click();
    await expect(page.locator('th[data-sort="cells"]')).toHaveAttribute(
      'data-order',
      'desc'
    );
    const order = await rows.evaluateAll(list =>
      list.map(r => (r as HTMLElement).dataset.user)
    );
    expect(order.indexOf('alice')).toBeLessThan(order.indexOf('bob'));

    // Filtered by notebook path: only bob's lab2.
    await page.locator('[data-themisto-class-filter="notebook"]').fill('lab2');
    await expect(
      page.locator('.themisto-ClassView-row[data-user="alice"]')
    ).toHaveCount(0, {
      timeout: 10000
    });
    await expect(
      page.locator('.themisto-ClassView-row[data-user="bob"]')
    ).toHaveCount(1);
    await page.locator('[data-themisto-class-filter="notebook"]').fill('');
    await expect(
      page.locator('.themisto-ClassView-row[data-user="alice"]')
    ).toHaveCount(1, {
      timeout: 10000
    });

    // Drill down: alice ran lab1 in two sessions; she picks one (the latest
    // preselected), replayed read-only in the prediction panel.
    await page
      .locator(
        '.themisto-ClassView-row[data-user="alice"] .themisto-ClassView-open'
      )
      .click();
    const dialog = page.locator('.jp-Dialog');
    await expect(dialog).toContainText("Replay which of alice's sessions");
    const options = dialog.locator('select option');
    await expect(options).toHaveCount(2);
    await expect(options.first()).toContainText('Session 2 of 2');
    await expect(options.first()).toContainText('3 cells');
    await expect(options.nth(1)).toContainText('Session 1 of 2');
    await dialog.getByRole('button', { name: 'Replay' }).click();
    const panel = page.locator('#themisto-prediction-panel');
    await expect(panel).toBeVisible({ timeout: 15000 });
    await expect(panel.locator('.themisto-Header-name')).toHaveAttribute(
      'data-replay-of',
      'alice',
      { timeout: 15000 }
    );
    await expect(
      panel.locator('.themisto-Banner[data-kind="replay"]')
    ).toContainText('alice');
    await expect(panel).toHaveAttribute('data-view', 'review');
    await expect(panel.locator('.themisto-Header-steps')).toHaveAttribute(
      'data-steps',
      '3'
    );
    // Read-only: nothing to insert, and no prediction to ask for.
    await expect(panel.locator('.themisto-Insert')).toHaveCount(0);
    await expect(panel.locator('.themisto-PredictNow')).toBeDisabled();
    // Its recorded runtime is shown.
    await expect(panel.locator('.themisto-RuntimeSection')).toContainText('x');
  });

  test('a user opts out from the menu, the status bar says so, and opts in again', async ({
    page
  }) => {
    try {
      await page.menu.clickMenuItem('Themisto>Record My Work');
      await page
        .getByRole('button', { name: 'Stop recording' })
        .click({ timeout: 10000 });
      const item = page.locator('.themisto-OptedOut');
      await expect(item).toHaveText('Themisto: not recording you', {
        timeout: 10000
      });
      const me = await page.request.get('/themisto/api/me');
      expect((await me.json()).consent).toBe(false);
      await item.click(); // records again
      await expect(item).toBeHidden({ timeout: 10000 });
      await expect(item).toHaveAttribute('data-consent', 'true');
    } finally {
      await page.request.put('/themisto/api/me', { data: { consent: true } });
    }
    expect(
      (await (await page.request.get('/themisto/api/me')).json()).consent
    ).toBe(true);
  });
});
