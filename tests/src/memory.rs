//! A `ctxhost` child's peak resident memory, read while it runs (Linux).

/// Waits for `child`: whether it exited with success, and its peak resident memory in bytes
/// where the system reports it.
pub fn wait_measured(mut child: std::process::Child) -> (bool, Option<u64>) {
    // The peak is the child's own memory's high-water mark (`VmHWM`), read while it runs: the
    // rusage of a reaped child would also count the pages of this test process it was spawned
    // from (its memory until `exec`). The mark only grows, so the last reading is the peak up
    // to a few milliseconds before the exit.
    let mut peak = None;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let Some(hwm) = high_water_mark(child.id()) {
            peak = Some(peak.unwrap_or(0).max(hwm));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    (status.success(), peak)
}

/// `VmHWM` of a running process, in bytes (Linux), or `None`; `None` too while the process is
/// not yet the `ctxhost` binary. The spawn returns as the child's `exec` lets go of this test
/// process's memory, a moment before the child has memory of its own: read then, the mark is
/// this process's (one CI run read 657 MB for a run that peaks at 32 MB).
fn high_water_mark(pid: u32) -> Option<u64> {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    if exe.file_name() != crate::binary().file_name() {
        return None;
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
