//! A headless Chromium driven over the W3C WebDriver protocol (JSON over
//! HTTP to `chromedriver`, with the reqwest client the crate already has: a
//! WebDriver crate would change the features of url's dependencies and
//! rebuild the whole stack for the tests).

use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The WebDriver name of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    rt: tokio::runtime::Runtime,
    http: reqwest::Client,
}

/// The driver and browser setup.sh installs (Debian's chromium and chromium-driver).
fn find(names: &[&str]) -> String {
    for n in names {
        for dir in ["/usr/bin", "/usr/lib/chromium"] {
            let p = std::path::Path::new(dir).join(n);
            if p.exists() {
                return p.display().to_string();
            }
        }
    }
    panic!("none of {names:?} installed: run ./setup.sh (it installs chromium and chromium-driver)")
}

impl Browser {
    /// Start chromedriver on a free loopback port and a headless session.
    pub fn start() -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new(find(&["chromedriver"]))
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let rt = tokio::runtime::Runtime::new().unwrap();
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let mut b = Browser {
            driver,
            base,
            session: String::new(),
            rt,
            http,
        };
        let started = Instant::now();
        while b.call("GET", "/status", None).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "chromedriver did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": find(&["chromium", "chromium-browser"]),
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,1400"]
            }
        }}});
        let v = b
            .call("POST", "/session", Some(caps))
            .expect("a browser session");
        b.session = v["sessionId"].as_str().expect("sessionId").to_string();
        b
    }

    /// One WebDriver command: its `value`, or the error it answered.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let url = format!("{}{path}", self.base);
        self.rt.block_on(async {
            let req = match method {
                "GET" => self.http.get(&url),
                "DELETE" => self.http.delete(&url),
                _ => self
                    .http
                    .post(&url)
                    .header("Content-Type", "application/json")
                    .body(body.unwrap_or(json!({})).to_string()),
            };
            let r = req.send().await.map_err(|e| e.to_string())?;
            let ok = r.status().is_success();
            let bytes = r.bytes().await.map_err(|e| e.to_string())?;
            let v: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
            match ok {
                true => Ok(v["value"].clone()),
                false => Err(v["value"].to_string()),
            }
        })
    }

    fn session_call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        self.call(method, &path, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    pub fn goto(&self, url: &str) {
        self.session_call("POST", "/url", Some(json!({ "url": url })));
    }

    pub fn url(&self) -> String {
        self.session_call("GET", "/url", None)
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The first element `css` selects, waiting up to 10 s for it.
    pub fn find(&self, css: &str) -> Element<'_> {
        let started = Instant::now();
        loop {
            let path = format!("/session/{}/element", self.session);
            let found = self.call(
                "POST",
                &path,
                Some(json!({"using": "css selector", "value": css})),
            );
            if let Ok(v) = found {
                return Element {
                    browser: self,
                    id: v[ELEMENT]
                        .as_str()
                        .unwrap_or_else(|| panic!("{css}: {v}"))
                        .to_string(),
                };
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "no element {css} on {}",
                self.url()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The page's text as the browser renders it.
    pub fn text(&self) -> String {
        self.find("body").text()
    }

    /// A PNG of the window, written to `path`.
    pub fn screenshot(&self, path: &std::path::Path) {
        use base64::Engine;
        let v = self.session_call("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap())
            .unwrap();
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.call("DELETE", &format!("/session/{}", self.session), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

pub struct Element<'a> {
    browser: &'a Browser,
    id: String,
}

impl Element<'_> {
    fn call(&self, method: &str, what: &str, body: Option<Value>) -> Value {
        self.browser
            .session_call(method, &format!("/element/{}{what}", self.id), body)
    }

    pub fn click(&self) {
        self.call("POST", "/click", None);
    }

    pub fn text(&self) -> String {
        self.call("GET", "/text", None)
            .as_str()
            .unwrap()
            .to_string()
    }

    pub fn displayed(&self) -> bool {
        self.call("GET", "/displayed", None).as_bool().unwrap()
    }

    pub fn attribute(&self, name: &str) -> Option<String> {
        self.call("GET", &format!("/attribute/{name}"), None)
            .as_str()
            .map(str::to_string)
    }

    /// Replace the field's value with `text`.
    pub fn type_text(&self, text: &str) {
        self.call("POST", "/clear", None);
        self.call("POST", "/value", Some(json!({ "text": text })));
    }
}
