//! A throwaway PostgreSQL server for the suite: a cluster made by `initdb` in a temporary
//! directory, its server a child of the test process (it dies with it) on a free loopback port,
//! one per test process; each test takes a database of its own.
//!
//! The server binaries come from `PATH` or Debian's `/usr/lib/postgresql/<version>/bin`
//! (`.ci/run` installs the `postgresql` package). Without them a test that needs PostgreSQL
//! fails with a message saying so: it is never skipped.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// The superuser `initdb` creates (whatever the OS user is).
const SUPERUSER: &str = "postgres";

/// A running throwaway server.
pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    server: Option<Child>,
}

static SHARED: OnceLock<Postgres> = OnceLock::new();
static DATABASES: AtomicU32 = AtomicU32::new(0);

impl Postgres {
    /// This test process's server, started on first use.
    pub fn shared() -> &'static Postgres {
        // Started from a thread that lives as long as the process: the server dies with the
        // thread that started it (PR_SET_PDEATHSIG), and a test's thread ends with the test.
        SHARED.get_or_init(|| {
            let (started_tx, started) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = started_tx.send(Postgres::start());
                loop {
                    std::thread::park();
                }
            });
            started.recv().expect("the PostgreSQL server starts")
        })
    }

    /// A new, empty database on the shared server; its URL.
    pub fn database(tag: &str) -> String {
        let server = Postgres::shared();
        let name = format!(
            "{}_{}_{}",
            tag.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
            std::process::id(),
            DATABASES.fetch_add(1, Ordering::Relaxed)
        );
        let status = server
            .tool("createdb")
            .args(["-h", "127.0.0.1", "-p", &server.port.to_string()])
            .args(["-U", SUPERUSER, &name])
            .status()
            .expect("run createdb");
        assert!(status.success(), "createdb {name} failed: {status}");
        server.url(&name)
    }

    /// The URL of database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{name}", self.port)
    }

    /// A server of the caller's own (one it may stop and start again), with one database; its
    /// URL.
    pub fn dedicated(tag: &str) -> (Postgres, String) {
        let server = Postgres::start();
        let status = server
            .tool("createdb")
            .args(["-h", "127.0.0.1", "-p", &server.port.to_string()])
            .args(["-U", SUPERUSER, tag])
            .status()
            .expect("run createdb");
        assert!(status.success(), "createdb {tag} failed: {status}");
        let url = server.url(tag);
        (server, url)
    }

    /// Stops the server (a fast shutdown: clients are disconnected) and waits until it is down.
    pub fn stop(&mut self) {
        if let Some(mut server) = self.server.take() {
            // SAFETY: kill(2) on our own child's pid; SIGINT is postgres' fast shutdown.
            unsafe {
                libc::kill(server.id() as i32, libc::SIGINT);
            }
            server.wait().expect("postgres stops");
        }
    }

    /// Starts a stopped server again on the same data and port, and waits until it is ready.
    pub fn restart(&mut self) {
        assert!(self.server.is_none(), "the server is running");
        self.server = Some(launch(&self.bin, self.dir.path(), self.port));
    }

    /// Runs `sql` with psql against `url`; its rows, one per line, fields split by `|`.
    pub fn psql(url: &str, sql: &str) -> String {
        let output = Postgres::shared()
            .tool("psql")
            .args([url, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .expect("run psql");
        assert!(
            output.status.success(),
            "psql failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("UTF-8 rows")
    }

    /// The port the server listens on (loopback).
    pub fn port(&self) -> u16 {
        self.port
    }

    fn tool(&self, name: &str) -> Command {
        let mut command = Command::new(self.bin.join(name));
        command.env_remove("PGPASSWORD");
        command
    }

    fn start() -> Postgres {
        let bin = server_bin_dir().unwrap_or_else(|| {
            panic!(
                "PostgreSQL's server programs (initdb, postgres) were not found on PATH or under \
                 /usr/lib/postgresql/*/bin: install Debian's `postgresql` package \
                 (apt-get install postgresql; .ci/run does) to run the PostgreSQL tests"
            )
        });
        sweep_ended_clusters();
        let dir = tempfile::Builder::new()
            .prefix(CLUSTER_PREFIX)
            .tempdir()
            .expect("make the cluster's directory");
        let data = dir.path().join("data");
        let owner = server_owner();
        if let Some((uid, gid)) = owner {
            // initdb and postgres refuse to run as root: the cluster belongs to the
            // `postgres` account the package creates.
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown cluster");
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
                .expect("chmod cluster");
        }
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .args(["-D", path_str(&data), "-U", SUPERUSER, "-A", "trust"])
            .args(["-E", "UTF8", "--locale", "C.UTF-8"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        as_owner(&mut initdb, owner);
        let output = initdb.output().expect("run initdb");
        assert!(
            output.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let port = free_port();
        let server = launch(&bin, dir.path(), port);
        Postgres {
            dir,
            bin,
            port,
            server: Some(server),
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What every cluster directory's name starts with (in the system's temporary directory).
const CLUSTER_PREFIX: &str = "ctxhost-pg-";

/// How old a cluster with no server must be before it counts as ended: older than any
/// `initdb` still filling one in.
const ENDED_AFTER: Duration = Duration::from_secs(600);

/// Removes the clusters of test processes that have ended. A process's shared server lives in
/// a static, which is never dropped, so its directory (hundreds of MB) outlives the process;
/// the next test process that starts a server removes those whose server is gone.
fn sweep_ended_clusters() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .starts_with(CLUSTER_PREFIX)
        {
            continue;
        }
        let dir = entry.path();
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > ENDED_AFTER);
        if old && !server_running(&dir) {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// Whether the server of the cluster in `dir` is running (its `postmaster.pid` names a live
/// process).
fn server_running(dir: &Path) -> bool {
    let Ok(pid_file) = std::fs::read_to_string(dir.join("data").join("postmaster.pid")) else {
        return false;
    };
    let Some(pid) = pid_file
        .lines()
        .next()
        .and_then(|line| line.trim().parse::<i32>().ok())
    else {
        return false;
    };
    // SAFETY: kill(2) with signal 0 only asks whether the process exists.
    let answer = unsafe { libc::kill(pid, 0) };
    answer == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Starts the server of the cluster in `dir` on `port` and waits until it is ready.
fn launch(bin: &Path, dir: &Path, port: u16) -> Child {
    let data = dir.join("data");
    let owner = server_owner();
    let mut server = Command::new(bin.join("postgres"));
    server
        .args(["-D", path_str(&data), "-p", &port.to_string()])
        .args(["-k", path_str(dir)])
        .args(["-c", "listen_addresses=127.0.0.1"])
        // A test cluster: durability buys nothing and costs time.
        .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
        .args(["-c", "full_page_writes=off", "-c", "max_connections=200"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    as_owner(&mut server, owner);
    // SAFETY: prctl is async-signal-safe; it ties the server's life to this process.
    unsafe {
        server.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = server.spawn().expect("start postgres");
    // Ready when the server says so in its log (no polling against a deadline).
    let stderr = child.stderr.take().expect("server stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    loop {
        match lines.next() {
            Some(Ok(line)) => {
                let ready = line.contains("ready to accept connections");
                seen.push(line);
                if ready {
                    break;
                }
            }
            _ => panic!("postgres stopped before it was ready:\n{}", seen.join("\n")),
        }
    }
    // Keep draining its log so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    child
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

/// The directory holding `initdb` and `postgres`: PATH first, then the newest Debian version.
fn server_bin_dir() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).find(|dir| dir.join("initdb").is_file()));
    if let Some(dir) = on_path {
        // A symlinked initdb (Debian's wrappers) lives beside its postgres.
        let initdb = std::fs::canonicalize(dir.join("initdb")).ok()?;
        return initdb.parent().map(Path::to_path_buf);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// Root runs the server as the `postgres` account; anyone else as themselves.
fn server_owner() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let name = std::ffi::CString::new(SUPERUSER).unwrap();
    // SAFETY: getpwnam returns null or a pointer to a static record, read at once.
    let record = unsafe { libc::getpwnam(name.as_ptr()) };
    assert!(
        !record.is_null(),
        "running as root, the PostgreSQL tests need the `postgres` account (Debian's \
         postgresql package creates it) to own the throwaway cluster"
    );
    // SAFETY: checked non-null above.
    let record = unsafe { &*record };
    Some((record.pw_uid, record.pw_gid))
}

fn as_owner(command: &mut Command, owner: Option<(u32, u32)>) {
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid);
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}
