//! A loopback HTTP/1.1 server for the tests that fetch over HTTP: files by
//! URL path, `Range: bytes=N-`, one request per connection, every body it
//! sends logged, and faults played on request.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server does to the next request for a path.
#[derive(Clone, Debug)]
pub enum Fault {
    /// Answer 500 once, then serve.
    FailOnce,
    /// Send the headers and this many body bytes, then close, once.
    CutOnceAfter(usize),
    /// Accept and never answer.
    Hang,
    /// Answer 302 to this URL.
    RedirectTo(String),
}

/// One response body the server sent: path, first byte, bytes written.
#[derive(Clone, Debug)]
pub struct Served {
    pub path: String,
    pub from: u64,
    pub bytes: u64,
}

#[derive(Default)]
pub struct State {
    pub files: Mutex<HashMap<String, Vec<u8>>>,
    pub faults: Mutex<HashMap<String, Fault>>,
    pub served: Mutex<Vec<Served>>,
    /// A pause after each 16 KiB written, to make a download slow.
    pub pause: Mutex<Option<Duration>>,
}

/// The server; it lives as long as the test process.
pub struct Server {
    pub addr: SocketAddr,
    pub state: Arc<State>,
}

/// What the server writes at a time.
pub const CHUNK: usize = 16 * 1024;

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || {
                    let _ = answer(stream, &state);
                });
            }
        });
        Server { addr, state }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn serve(&self, path: &str, bytes: Vec<u8>) {
        self.state
            .files
            .lock()
            .unwrap()
            .insert(path.to_string(), bytes);
    }

    pub fn fault(&self, path: &str, fault: Fault) {
        self.state
            .faults
            .lock()
            .unwrap()
            .insert(path.to_string(), fault);
    }

    pub fn served(&self) -> Vec<Served> {
        self.state.served.lock().unwrap().clone()
    }
}

fn answer(mut stream: TcpStream, state: &State) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut from = 0u64;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        let lower = h.to_ascii_lowercase();
        if let Some(r) = lower.strip_prefix("range: bytes=") {
            from = r.trim().trim_end_matches('-').parse().unwrap_or(0);
        }
    }
    let fault = {
        let mut faults = state.faults.lock().unwrap();
        match faults.get(&path) {
            Some(Fault::Hang) | Some(Fault::RedirectTo(_)) => faults.get(&path).cloned(),
            Some(_) => faults.remove(&path),
            None => None,
        }
    };
    let head = |status: &str, extra: &str, len: usize| {
        format!("HTTP/1.1 {status}\r\nContent-Length: {len}\r\nConnection: close\r\n{extra}\r\n")
    };
    match fault {
        Some(Fault::Hang) => {
            std::thread::sleep(Duration::from_secs(60));
            return Ok(());
        }
        Some(Fault::FailOnce) => {
            return stream.write_all(head("500 Internal Server Error", "", 0).as_bytes())
        }
        Some(Fault::RedirectTo(to)) => {
            let extra = format!("Location: {to}\r\n");
            return stream.write_all(head("302 Found", &extra, 0).as_bytes());
        }
        _ => {}
    }
    let Some(body) = state.files.lock().unwrap().get(&path).cloned() else {
        return stream.write_all(head("404 Not Found", "", 0).as_bytes());
    };
    let len = body.len() as u64;
    let head = if from == 0 {
        head("200 OK", "", body.len())
    } else if from >= len {
        return stream.write_all(head("416 Range Not Satisfiable", "", 0).as_bytes());
    } else {
        let range = format!("Content-Range: bytes {from}-{}/{len}\r\n", len - 1);
        head("206 Partial Content", &range, (len - from) as usize)
    };
    stream.write_all(head.as_bytes())?;
    let rest = &body[from as usize..];
    let rest = match fault {
        Some(Fault::CutOnceAfter(n)) => &rest[..n.min(rest.len())],
        _ => rest,
    };
    let pause = *state.pause.lock().unwrap();
    let mut sent = 0u64;
    for chunk in rest.chunks(CHUNK) {
        if stream.write_all(chunk).is_err() {
            break;
        }
        sent += chunk.len() as u64;
        if let Some(p) = pause {
            std::thread::sleep(p);
        }
    }
    state.served.lock().unwrap().push(Served {
        path,
        from,
        bytes: sent,
    });
    let _ = stream.shutdown(std::net::Shutdown::Both);
    Ok(())
}
