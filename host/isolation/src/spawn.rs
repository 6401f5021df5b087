//! Starting an engine's child process so that it cannot outlive the host, and killing it with
//! whatever it started.
//!
//! On Unix the child leads a process group of its own, so [`kill`] reaches a process the
//! plugin started as well. On Linux the child asks the kernel for [`HOST_DEATH_SIGNAL`] when
//! its parent dies (`PR_SET_PDEATHSIG`), set between fork and exec, and its first act is to
//! take that signal as the order to kill its whole group ([`die_with_host`]): a host that was
//! SIGKILLed runs nothing after, so the child must take what the plugin started with it (the
//! signal's default action, until then, ends the child alone, which has started nothing yet).
//! The kernel sends it when the *thread* that forked the child ends, not the process: children
//! are forked from one thread that lives as long as the host ([`spawn`]), never from a pool
//! thread that may retire.

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
                if libc::prctl(libc::PR_SET_PDEATHSIG, HOST_DEATH_SIGNAL as libc::c_ulong) != 0 {
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

/// The signal an engine's child gets when its host dies (Linux): a catchable one, so that the
/// child can take its group with it ([`die_with_host`]). Whoever else sends it (a service
/// manager stopping everything) gets the same.
#[cfg(target_os = "linux")]
pub const HOST_DEATH_SIGNAL: libc::c_int = libc::SIGTERM;

/// In an engine's child, before any plugin code runs: on [`HOST_DEATH_SIGNAL`], kill this
/// process's group, itself and whatever the plugin started (Linux only; elsewhere nothing).
pub fn die_with_host() {
    #[cfg(target_os = "linux")]
    {
        extern "C" fn kill_group(_signal: libc::c_int) {
            // SAFETY: kill(2) is async-signal-safe; 0 names this process's own group, which
            // it leads (see `prepare`).
            unsafe {
                libc::kill(0, libc::SIGKILL);
            }
        }
        // SAFETY: installs a handler that calls only an async-signal-safe function.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = kill_group as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(HOST_DEATH_SIGNAL, &action, std::ptr::null_mut());
        }
    }
}

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
