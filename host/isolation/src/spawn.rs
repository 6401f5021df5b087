//! Starting an engine's child process so that it cannot outlive the host, and killing it with
//! whatever it started.
//!
//! On Linux the child asks the kernel for SIGKILL when its parent dies
//! (`PR_SET_PDEATHSIG`), set between fork and exec. The kernel sends it when the *thread*
//! that forked the child ends, not the process: children are forked from one thread that
//! lives as long as the host ([`spawn`]), never from a pool thread that may retire. On Unix
//! the child leads a process group of its own, so [`kill`] reaches a process the plugin
//! started as well.

use std::io;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::OnceLock;

type Job = (Command, mpsc::SyncSender<io::Result<Child>>);

/// Starts `command` as an engine's child (see the [module docs](self)).
pub fn spawn(mut command: Command) -> io::Result<Child> {
    prepare(&mut command);
    static SPAWNER: OnceLock<mpsc::Sender<Job>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (jobs, received) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("ctxhost-child-spawner".to_string())
            .spawn(move || {
                for (mut command, reply) in received {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("a thread to start engine processes from");
        jobs
    });
    let (reply, answer) = mpsc::sync_channel(1);
    spawner
        .send((command, reply))
        .map_err(|_| io::Error::other("the thread that starts engine processes is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the thread that starts engine processes is gone"))?
}

#[cfg(unix)]
fn prepare(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
    #[cfg(target_os = "linux")]
    {
        let host = std::process::id() as libc::pid_t;
        // SAFETY: runs in the forked child before exec, and calls only async-signal-safe
        // functions (prctl, getppid), allocating nothing.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // A host that died before the line above sends no signal: give up now.
                if libc::getppid() != host {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
}

#[cfg(not(unix))]
fn prepare(_command: &mut Command) {}

/// Kills `child` and every process in its group (what the plugin started); the child is
/// still to be reaped (`wait`).
pub fn kill(child: &mut Child) -> io::Result<()> {
    #[cfg(unix)]
    {
        // The child leads its group and is not reaped yet, so the id is still its own.
        let group = child.id() as libc::pid_t;
        // SAFETY: a plain system call on a process group id.
        if unsafe { libc::kill(-group, libc::SIGKILL) } == 0 {
            return Ok(());
        }
    }
    child.kill()
}
