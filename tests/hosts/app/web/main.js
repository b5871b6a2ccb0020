// The page: the package on the main thread and through createWorker() (no worker of its own).
import { onMainThread, viaCreateWorker, report } from './checks.js';

report((async () => ({ main: onMainThread(), worker: await viaCreateWorker() }))());
