//! Network-by-name proxy benchmark: the proxy a sandboxed command reaches
//! the network through (see docs/sandbox.md, "Network by name"), against
//! going direct on the same machine, interleaved so that load drifts hit
//! both alike, over several runs for the spread:
//!
//! - throughput of a large download: from a local origin on the loopback
//!   (the proxy's own cost, the network out of the way) and from a real
//!   registry (a 9.7 MB crate from static.crates.io, with curl);
//! - what the proxy adds to setting up a TLS connection (curl's
//!   `time_appconnect`, direct and through the proxy): to a TLS origin the
//!   bench starts on the loopback (`openssl s_server` with a self-signed
//!   certificate made for the run, which the operator's list allows by
//!   address), where the proxy's own cost is all that differs, and to
//!   pypi.org, where the network's spread comes on top;
//! - the proxy's memory with 64 connections open at once.
//!
//! Run with `cargo bench --bench proxy_bench` (add `-- --quick` for fewer
//! rounds, `-- --tls-only` for the local TLS set-up alone). The local TLS figure needs curl and openssl, the registry
//! figures curl and the network; each is left out, with a line saying so,
//! when what it needs is missing.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::process::Command;
use std::time::{Duration, Instant};

use bash_mcp::sandbox::network::{NetPolicy, Proxy};

/// A large crate on static.crates.io.
const LARGE: &str = "https://static.crates.io/crates/windows/windows-0.58.0.crate";
/// A small TLS fetch from PyPI.
const SMALL: &str = "https://pypi.org/simple/six/";
/// The proxy's answer to a `CONNECT` it serves.
const ESTABLISHED: &[u8; 39] = b"HTTP/1.1 200 Connection established\r\n\r\n";
/// Connections held open at once for the memory figure.
const CONCURRENT: usize = 64;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runs = if quick { 3 } else { 5 };
    if std::env::args().any(|a| a == "--tls-only") {
        local_tls_setup(runs, if quick { 10 } else { 40 });
        return;
    }
    local_throughput(runs, if quick { 64 } else { 256 } << 20, if quick { 3 } else { 5 });
    println!();
    local_tls_setup(runs, if quick { 10 } else { 40 });
    println!();
    let proxy = registry_proxy();
    if curl_works() {
        registry_throughput(&proxy, runs, if quick { 2 } else { 3 });
        println!();
        tls_setup(&proxy, runs, if quick { 5 } else { 10 });
    } else {
        println!("registry figures left out: curl is missing or {SMALL} is not reachable from here");
    }
    println!();
    memory();
}

/// Direct and proxied downloads of `size` bytes from an origin on the
/// loopback, `rounds` each per run, interleaved.
fn local_throughput(runs: usize, size: usize, rounds: usize) {
    let origin = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = origin.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let chunk = vec![0x5au8; 256 * 1024];
        for stream in origin.incoming() {
            let Ok(mut stream) = stream else { continue };
            let chunk = chunk.clone();
            std::thread::spawn(move || {
                let mut sent = 0;
                while sent < size {
                    let n = chunk.len().min(size - sent);
                    if stream.write_all(&chunk[..n]).is_err() {
                        return;
                    }
                    sent += n;
                }
            });
        }
    });
    let policy = NetPolicy::new(&[format!("127.0.0.1:{port}")], &[]).unwrap();
    let proxy = Proxy::serve(TcpListener::bind("127.0.0.1:0").unwrap(), policy, None).unwrap();
    let download = |proxied: bool| -> Duration {
        let start = Instant::now();
        let mut stream = match proxied {
            false => TcpStream::connect(("127.0.0.1", port)).unwrap(),
            true => {
                let mut s = TcpStream::connect(("127.0.0.1", proxy.port())).unwrap();
                s.write_all(format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes())
                    .unwrap();
                let mut head = [0u8; ESTABLISHED.len()];
                s.read_exact(&mut head).unwrap();
                assert_eq!(&head, ESTABLISHED);
                s
            }
        };
        let mut buf = vec![0u8; 256 * 1024];
        let mut got = 0;
        while got < size {
            match stream.read(&mut buf).unwrap() {
                0 => break,
                n => got += n,
            }
        }
        assert_eq!(got, size);
        start.elapsed()
    };
    println!(
        "throughput, {} MiB from an origin on the loopback: {runs} runs of {rounds} interleaved rounds",
        size >> 20
    );
    let mb_s = |d: Duration| size as f64 / d.as_secs_f64() / 1e6;
    let (direct, proxied) = interleaved(runs, rounds, &download);
    report_rate("direct", "through the proxy", &direct, &proxied, mb_s, "MB/s");
}

/// Runs `f(false)` and `f(true)` alternately, `rounds` times per run: the
/// median of each, per run.
fn interleaved(runs: usize, rounds: usize, f: &dyn Fn(bool) -> Duration) -> (Vec<Duration>, Vec<Duration>) {
    f(false);
    f(true);
    let (mut direct, mut proxied) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (mut d, mut p) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            d.push(f(false));
            p.push(f(true));
        }
        direct.push(median(&mut d));
        proxied.push(median(&mut p));
    }
    (direct, proxied)
}

/// Prints the median over runs of each side as a rate, the ratio
/// (proxied / direct, so above 1 is faster through the proxy), and the
/// ratio's spread over runs.
fn report_rate(
    a: &str,
    b: &str,
    direct: &[Duration],
    proxied: &[Duration],
    rate: impl Fn(Duration) -> f64,
    unit: &str,
) {
    let ratios: Vec<f64> = direct.iter().zip(proxied).map(|(d, p)| rate(*p) / rate(*d)).collect();
    let (d, p) = (median(&mut direct.to_vec()), median(&mut proxied.to_vec()));
    println!("  {a:<20} {:>9.1} {unit}", rate(d));
    println!("  {b:<20} {:>9.1} {unit}", rate(p));
    println!(
        "  ratio {:.2} (per run {:.2} - {:.2}; target >= 0.8)",
        rate(p) / rate(d),
        ratios.iter().cloned().fold(f64::INFINITY, f64::min),
        ratios.iter().cloned().fold(0.0, f64::max)
    );
}

/// A proxy on the host's loopback allowing `@package-registries`, plus the
/// special-purpose addresses this machine resolves them to (an egress
/// proxy on a private or documentation address), as an operator here
/// would list them.
fn registry_proxy() -> Proxy {
    let mut allow = vec!["@package-registries".to_owned()];
    for host in ["pypi.org", "static.crates.io"] {
        for addr in (host, 443).to_socket_addrs().into_iter().flatten() {
            if bash_mcp::sandbox::network::address::special_purpose(addr.ip()).is_some() {
                allow.push(addr.ip().to_string());
            }
        }
    }
    let policy = NetPolicy::new(&allow, &[]).unwrap();
    Proxy::serve(TcpListener::bind("127.0.0.1:0").unwrap(), policy, None).unwrap()
}

fn curl_works() -> bool {
    Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "--max-time", "30", SMALL])
        .status()
        .is_ok_and(|s| s.success())
}

/// `curl -w <format> <url>`, through `proxy` or not (`--noproxy '*'`, so
/// no proxy of the environment is used either): curl's output.
fn curl(url: &str, format: &str, proxy: Option<&Proxy>) -> String {
    curl_with(url, format, proxy, &[])
}

/// [`curl`] with `extra` arguments.
fn curl_with(url: &str, format: &str, proxy: Option<&Proxy>, extra: &[&str]) -> String {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-o", "/dev/null", "--max-time", "120", "-w", format]);
    cmd.args(extra);
    match proxy {
        Some(p) => cmd.args(["--proxy", &format!("http://127.0.0.1:{}", p.port())]),
        None => cmd.args(["--noproxy", "*"]),
    };
    let out = cmd.arg(url).output().unwrap();
    assert!(
        out.status.success(),
        "curl {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One of curl's timings (`field`, in seconds) of a fetch of `url`.
fn curl_time(url: &str, field: &str, proxy: Option<&Proxy>) -> Duration {
    curl_time_with(url, field, proxy, &[])
}

/// [`curl_time`] with `extra` arguments.
fn curl_time_with(url: &str, field: &str, proxy: Option<&Proxy>, extra: &[&str]) -> Duration {
    let secs: f64 = curl_with(url, field, proxy, extra).trim().parse().unwrap();
    Duration::from_secs_f64(secs)
}

fn registry_throughput(proxy: &Proxy, runs: usize, rounds: usize) {
    let size: f64 = curl(LARGE, "%{size_download}", None).trim().parse().unwrap();
    println!(
        "throughput, {:.1} MB from {LARGE} with curl: {runs} runs of {rounds} interleaved rounds",
        size / 1e6
    );
    let fetch = |proxied: bool| curl_time(LARGE, "%{time_total}", proxied.then_some(proxy));
    let (direct, proxied) = interleaved(runs, rounds, &fetch);
    report_rate(
        "direct",
        "through the proxy",
        &direct,
        &proxied,
        |d| size / d.as_secs_f64() / 1e6,
        "MB/s",
    );
}

/// A TLS origin on the loopback for the run: `openssl s_server` with a
/// self-signed certificate made in a directory of its own. Killed, reaped
/// and its directory removed when dropped.
struct TlsOrigin {
    server: std::process::Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl TlsOrigin {
    /// `Err`, with the reason, when openssl cannot make or serve one.
    fn start() -> Result<TlsOrigin, String> {
        let dir = std::env::temp_dir().join(format!("bash-mcp-proxy-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let made = Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
            ])
            .args(["-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"])
            .args(["-addext", "subjectAltName=IP:127.0.0.1"])
            .args(["-keyout", "key.pem", "-out", "cert.pem"])
            .current_dir(&dir)
            .stderr(std::process::Stdio::null())
            .status();
        if !made.is_ok_and(|s| s.success()) {
            let _ = std::fs::remove_dir_all(&dir);
            return Err("openssl could not make a self-signed certificate (is openssl installed?)".into());
        }
        // A port that was free a moment ago; s_server fails if it was taken since.
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let server = Command::new("openssl")
            .args(["s_server", "-quiet", "-www", "-cert", "cert.pem", "-key", "key.pem"])
            .args(["-accept", &format!("127.0.0.1:{port}")])
            .current_dir(&dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        let server = match server {
            Ok(server) => server,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(format!("openssl s_server did not start: {e}"));
            }
        };
        let origin = TlsOrigin { server, port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err(format!("openssl s_server did not listen on 127.0.0.1:{port}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(origin)
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}/", self.port)
    }

    fn ca(&self) -> std::path::PathBuf {
        self.dir.join("cert.pem")
    }
}

impl Drop for TlsOrigin {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// curl's `time_appconnect` (TCP connected, TLS done) to a TLS origin on
/// the loopback, direct and through a proxy whose operator allows that
/// origin's address explicitly (the loopback is refused otherwise): the
/// proxy's own cost, the network out of the way.
fn local_tls_setup(runs: usize, rounds: usize) {
    if Command::new("curl").arg("--version").output().is_err() {
        println!("local TLS set-up left out: curl is missing");
        return;
    }
    let origin = match TlsOrigin::start() {
        Ok(origin) => origin,
        Err(why) => {
            println!("local TLS set-up left out: {why}");
            return;
        }
    };
    let policy = NetPolicy::new(&[format!("127.0.0.1:{}", origin.port)], &[]).unwrap();
    let proxy = Proxy::serve(TcpListener::bind("127.0.0.1:0").unwrap(), policy, None).unwrap();
    let (url, ca) = (origin.url(), origin.ca());
    let ca = ["--cacert", ca.to_str().unwrap()];
    println!(
        "TLS connection set-up to a local origin, {url} (openssl s_server, curl time_appconnect): {runs} runs of {rounds} interleaved rounds"
    );
    let setup = |proxied: bool| curl_time_with(&url, "%{time_appconnect}", proxied.then_some(&proxy), &ca);
    let (direct, proxied) = interleaved(runs, rounds, &setup);
    report_added(&direct, &proxied);
}

/// curl's `time_appconnect` (name resolved, TCP connected, TLS done) to
/// pypi.org, direct and through the proxy (there, the proxy resolves and
/// connects on the CONNECT): what the proxy adds, with the network's
/// spread on top (see [`local_tls_setup`] for the proxy's own cost).
fn tls_setup(proxy: &Proxy, runs: usize, rounds: usize) {
    println!("TLS connection set-up to {SMALL} (curl time_appconnect): {runs} runs of {rounds} interleaved rounds");
    let setup = |proxied: bool| curl_time(SMALL, "%{time_appconnect}", proxied.then_some(proxy));
    let (direct, proxied) = interleaved(runs, rounds, &setup);
    report_added(&direct, &proxied);
}

/// Prints the median over runs of each side, what the proxy adds (the
/// difference of the medians), and the spread of the per-run differences.
fn report_added(direct: &[Duration], proxied: &[Duration]) {
    let added: Vec<f64> = direct.iter().zip(proxied).map(|(d, p)| ms(*p) - ms(*d)).collect();
    let (d, p) = (median(&mut direct.to_vec()), median(&mut proxied.to_vec()));
    let range = |v: &[Duration]| {
        let lo = v.iter().min().copied().unwrap_or_default();
        let hi = v.iter().max().copied().unwrap_or_default();
        format!("(per run {:.2} - {:.2})", ms(lo), ms(hi))
    };
    println!("  {:<20} {:>8.2} ms {}", "direct", ms(d), range(direct));
    println!("  {:<20} {:>8.2} ms {}", "through the proxy", ms(p), range(proxied));
    println!(
        "  added {:.2} ms (per run {:.2} - {:.2}; target <= 5 ms)",
        ms(p) - ms(d),
        added.iter().cloned().fold(f64::INFINITY, f64::min),
        added.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
    );
}

/// This process's resident memory, from /proc.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// The proxy's memory with [`CONCURRENT`] tunnels open at once, each
/// having relayed 1 MiB each way (so both relay buffers are touched): the
/// resident growth of this process, which runs the proxy's threads.
fn memory() {
    let origin = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = origin.local_addr().unwrap().port();
    // Echoes every connection until it closes.
    std::thread::spawn(move || {
        for stream in origin.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut back = stream.try_clone().unwrap();
                let _ = std::io::copy(&mut stream, &mut back);
            });
        }
    });
    let policy = NetPolicy::new(&[format!("127.0.0.1:{port}")], &[]).unwrap();
    let before = rss_kib();
    let proxy = Proxy::serve(TcpListener::bind("127.0.0.1:0").unwrap(), policy, None).unwrap();
    let payload = vec![0xa5u8; 1 << 20];
    let mut open = Vec::new();
    for _ in 0..CONCURRENT {
        let mut s = TcpStream::connect(("127.0.0.1", proxy.port())).unwrap();
        s.write_all(format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes())
            .unwrap();
        let mut head = [0u8; ESTABLISHED.len()];
        s.read_exact(&mut head).unwrap();
        assert_eq!(&head, ESTABLISHED);
        let mut w = s.try_clone().unwrap();
        let p = payload.clone();
        let writer = std::thread::spawn(move || w.write_all(&p).unwrap());
        let mut back = vec![0u8; payload.len()];
        s.read_exact(&mut back).unwrap();
        writer.join().unwrap();
        open.push(s);
    }
    assert_eq!(proxy.open_connections(), CONCURRENT);
    let during = rss_kib();
    // The client and origin sides live in this process too: their threads
    // and buffers are counted against the proxy here, so this is an upper
    // bound of the proxy's own.
    println!("memory with {CONCURRENT} tunnels open through one proxy (client and origin in this process too):");
    println!(
        "  resident growth {:.1} MiB, {:.0} KiB per connection (each relays through 2 kernel pipes of 64 KiB, outside this figure)",
        (during - before) as f64 / 1024.0,
        (during - before) as f64 / CONCURRENT as f64
    );
    drop(open);
    drop(proxy);
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
