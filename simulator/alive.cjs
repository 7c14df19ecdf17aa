'use strict';
/** Whether a process is alive: signal 0 checks without sending (the simulators' peer files name pids). */
module.exports = function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
