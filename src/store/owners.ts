import { readFileSync } from 'node:fs';

/**
 * When a process started, as the kernel counts it (field 22 of /proc/PID/stat, clock ticks since
 * boot): with the pid, it names one process, never a later one that got the same pid. Undefined
 * where there is no /proc (the pid alone then names the process).
 */
function startTicks(pid: number | 'self'): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

const OWN_START = startTicks('self') ?? `t${Date.now()}`;
let runs = 0;

/**
 * A new owner of undelivered batches (backend.ts, Deliveries): `PID.START.N`, the N-th delivering
 * run of this process, which started at START (startTicks).
 */
export function newOwner(): string {
  runs++;
  return `${process.pid}.${OWN_START}.${runs}`;
}

/**
 * Whether the process that owns `owner`'s batches is gone: this process is alive; another is alive
 * while the kernel has a process of that pid which started when the owner's did (where there is no
 * /proc, while the pid exists). A malformed owner is taken for gone: no running process wrote it.
 * Processes are a machine's own: a store that processes of several machines (or pid namespaces)
 * share keeps its owners alive by lease instead (Redis).
 */
export function ownerGone(owner: string): boolean {
  const [pidText, start] = owner.split('.');
  const pid = Number(pidText);
  if (!Number.isSafeInteger(pid) || pid <= 0 || start === undefined) return true;
  if (pid === process.pid) return start !== OWN_START;
  const now = startTicks(pid);
  if (now !== undefined) return now !== start;
  if (!start.startsWith('t')) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'EPERM';
  }
}
