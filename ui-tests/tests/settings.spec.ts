import { expect, test } from '@jupyterlab/galata';

/*
 * The prediction settings in JupyterLab's settings editor, against the real
 * server (baseline predictor, contexts none and full): every entry titled,
 * each description said once, predictors and contexts chosen from the
 * server's lists rather than typed.
 */

test('the settings editor offers the server predictors, each entry titled and described once', async ({
  page
}, testInfo) => {
  await page.evaluate(async () => {
    await window.jupyterapp.commands.execute('settingeditor:open', {
      query: 'Themisto predictions'
    });
  });
  const plugin = page.locator('.jp-SettingsPanel .jp-SettingsForm').filter({
    hasText: 'Predictors to show'
  });
  await expect(plugin.first()).toBeVisible({ timeout: 30000 });
  const form = plugin.first();
  const text = (await form.textContent()) ?? '';
  const count = (needle: string) => text.split(needle).length - 1;
  expect(count('Predictors to show')).toBe(1);
  expect(count('Contexts to show')).toBe(1);
  expect(count("The server's predictors to show")).toBe(1);
  // Chosen, not typed: one box per predictor the server runs.
  await expect(form.getByRole('checkbox', { name: 'baseline' })).toBeVisible();
  await expect(form.getByRole('checkbox', { name: 'full' })).toBeVisible();
  // A box ticked is the setting saved.
  await form.getByRole('checkbox', { name: 'full' }).check();
  await expect
    .poll(
      async () =>
        page.evaluate(async () => {
          const found = await window.jupyterapp.serviceManager.settings.fetch(
            'themisto-ext:predictions'
          );
          return JSON.stringify(
            (found.settings as { contexts?: unknown } | null)?.contexts ?? null
          );
        }),
      { timeout: 15000 }
    )
    .toBe('["full"]');
  const path = testInfo.outputPath('settings.png');
  await form.screenshot({ path });
  await testInfo.attach('settings', { path, contentType: 'image/png' });
});
