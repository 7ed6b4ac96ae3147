/**
 * The client hooks' problems in the status bar: `health.hookProblems` (INGEST_CONTRACT.md 3.1) lists
 * why hooks injected nothing lately (no owner answered, a failure; never "nothing matched"). While
 * one is current (no hook answered since), the status bar warns and its tooltip says why.
 */

export interface HookProblem {
  at: string;
  event: string;
  client: string;
  reason: string;
}

export interface HookProblemView {
  warning: boolean;
  /** Appended to the status bar text when current. */
  label: string;
  /** Tooltip lines, newest last; empty without problems. */
  lines: string[];
}

export function hookProblemView(health: Record<string, unknown>): HookProblemView {
  const record = health.hookProblems as { current?: unknown; problems?: unknown } | null | undefined;
  const problems = Array.isArray(record?.problems) ? (record.problems as HookProblem[]) : [];
  if (problems.length === 0) {
    return { warning: false, label: "", lines: [] };
  }
  const warning = record?.current === true;
  const heading = warning ? "Hooks inject nothing:" : "Earlier hook problems (hooks have answered since):";
  const lines = [heading, ...problems.map((p) => `${String(p.at)} ${String(p.event)} (${String(p.client)}): ${String(p.reason)}`)];
  return { warning, label: warning ? " · hook problem" : "", lines };
}
