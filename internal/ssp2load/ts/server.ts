/**
 * syncstore's launcher for upstream Syncular's load suite. .ci/load-compare.sh
 * renames upstream's load/src/server.ts to upstream-server.ts and puts this
 * file in its place, so the harness (harness.ts: `bun run server.ts`,
 * SYNCULAR_LOAD_* in the environment, the `LOAD_SERVER_READY <port>` line,
 * the /__load/* routes) spawns either server unchanged. It picks by
 * SYNCULAR_LOAD_TARGET:
 *
 *   upstream        upstream's own load server, in this process (bun:sqlite,
 *                   or PostgreSQL when SYNCULAR_PG_URL is set)
 *   go:<driver>     our SSP2 server: the ssp2load binary at SSP2LOAD_BIN
 *                   (internal/ssp2load/cmd/ssp2load) with -driver <driver>
 *                   and the flags in SSP2LOAD_FLAGS (split on spaces, e.g.
 *                   "-pprof 127.0.0.1:7441"), as a child whose stdout is
 *                   the harness's pipe
 *
 * When SYNCULAR_LOAD_STATS names a file, the CPU time the server process
 * spent from its ready line to its exit — startup and seeding left out —
 * is written there as JSON when it exits ({pid, cpuUserUs, cpuSysUs}): for
 * upstream this process's own (process.cpuUsage), for ours the child's
 * (/proc/<pid>/stat at the ready line, its rusage at exit). A server the
 * harness had to kill writes nothing.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const target = process.env.SYNCULAR_LOAD_TARGET ?? 'upstream';
const statsFile = process.env.SYNCULAR_LOAD_STATS;

function writeStats(pid: number, userUs: number, sysUs: number): void {
  if (statsFile === undefined || statsFile === '') return;
  writeFileSync(
    statsFile,
    JSON.stringify({ pid, cpuUserUs: userUs, cpuSysUs: sysUs }),
  );
}

/** utime and stime of a process in µs, from /proc/<pid>/stat. */
function procCpu(pid: number): { user: number; system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat(5), counted from the state (field 3).
    const tick = 1e6 / 100; // USER_HZ is 100 on Linux
    return {
      user: Number(fields[11]) * tick,
      system: Number(fields[12]) * tick,
    };
  } catch {
    return { user: 0, system: 0 };
  }
}

if (target === 'upstream') {
  let atReady: NodeJS.CpuUsage | undefined;
  process.on('exit', () => {
    const u = process.cpuUsage(atReady);
    writeStats(process.pid, u.user, u.system);
  });
  // The module's top-level await ends with its ready line.
  await import('./upstream-server.ts');
  atReady = process.cpuUsage();
} else if (target.startsWith('go:')) {
  const bin = process.env.SSP2LOAD_BIN;
  if (bin === undefined || bin === '') {
    throw new Error('SYNCULAR_LOAD_TARGET=go:… needs SSP2LOAD_BIN');
  }
  const drv = target.slice(3);
  const args = [bin, '-driver', drv];
  // Like for like on PostgreSQL: upstream's Bun.SQL connects without TLS
  // when its URL does not ask for it, pgx's default (sslmode=prefer)
  // encrypts even a loopback connection. Ours gets the same server, user
  // and database as its default base DSN, without TLS.
  if (drv === 'postgres') {
    args.push('-dsn', 'postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable');
  }
  args.push(...(process.env.SSP2LOAD_FLAGS ?? '').split(' ').filter(Boolean));
  const child = Bun.spawn(args, {
    env: process.env,
    stdout: 'pipe',
    stderr: 'inherit',
  });
  // The harness ends a server by POST /__load/shutdown, then SIGTERM after
  // 2 s: pass signals on and stay until the child has dropped its store.
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    process.on(sig, () => child.kill(sig));
  }
  // Copy the child's stdout to ours (the harness's pipe), reading its CPU
  // time when the ready line passes.
  let atReady = { user: 0, system: 0 };
  const copied = (async () => {
    const decoder = new TextDecoder();
    let seen = '';
    for await (const chunk of child.stdout) {
      if (!seen.includes('LOAD_SERVER_READY')) {
        seen += decoder.decode(chunk, { stream: true });
        if (seen.includes('LOAD_SERVER_READY')) atReady = procCpu(child.pid);
      }
      process.stdout.write(chunk);
    }
  })();
  const code = await child.exited;
  await copied.catch(() => undefined);
  const usage = child.resourceUsage();
  if (usage !== undefined) {
    writeStats(
      child.pid,
      Number(usage.cpuTime.user) - atReady.user,
      Number(usage.cpuTime.system) - atReady.system,
    );
  }
  process.exit(code);
} else {
  throw new Error(`unknown SYNCULAR_LOAD_TARGET "${target}"`);
}
