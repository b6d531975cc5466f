//! ZooKeeper's client wire protocol, the part the latch needs: one TCP
//! socket per model connection, length-prefixed jute records
//! (`zookeeper-jute/src/main/resources/zookeeper.jute`: `ConnectRequest`,
//! `ConnectResponse`, `RequestHeader`, `ReplyHeader`, `CreateRequest`,
//! `GetChildrenRequest`, `GetDataRequest`, `DeleteRequest`, `WatcherEvent`,
//! `Stat`; op codes from `ZooDefs.OpCode`).
//!
//! Why not the `zookeeper-client` crate the server's readiness check uses:
//! it owns the connection and the session — its own read timeout (2/5 of
//! the session timeout, at most 3/5), pings and client-side expiry (7/5,
//! not ZOOKEEPER-4508's 4/3) — so the model's client, which makes exactly
//! those decisions as Java's `ClientCnxn` does, could not make them. Here
//! the model decides when to connect, ping, give a socket up and resume
//! its session; this module only carries each packet.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

/// `ZooDefs.OpCode`.
pub(super) mod op {
    pub const CREATE: i32 = 1;
    pub const DELETE: i32 = 2;
    pub const GET_DATA: i32 = 4;
    pub const GET_CHILDREN: i32 = 8;
    pub const PING: i32 = 11;
    pub const CLOSE_SESSION: i32 = -11;
}

/// `KeeperException.Code.NONODE`.
pub(super) const NO_NODE: i32 = -101;
/// The xid of a ping and of a watch event (`ClientCnxn`).
const PING_XID: i32 = -2;
const NOTIFICATION_XID: i32 = -1;
/// `Watcher.Event.EventType.NodeDeleted`.
const NODE_DELETED: i32 = 2;
/// `CreateMode.EPHEMERAL_SEQUENTIAL`.
pub(super) const EPHEMERAL_SEQUENTIAL: i32 = 3;
/// The largest frame the node reads (the server's `jute.maxbuffer` is 1 MB
/// by default; a latch's children list is far smaller).
const MAX_FRAME: usize = 4 << 20;

/// A jute record being written.
#[derive(Default)]
pub(super) struct Out(Vec<u8>);

impl Out {
    pub(super) fn int(mut self, v: i32) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub(super) fn long(mut self, v: i64) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub(super) fn boolean(mut self, v: bool) -> Self {
        self.0.push(u8::from(v));
        self
    }
    pub(super) fn buffer(self, v: &[u8]) -> Self {
        let len = i32::try_from(v.len()).unwrap_or(i32::MAX);
        let mut out = self.int(len);
        out.0.extend_from_slice(v);
        out
    }
    pub(super) fn string(self, v: &str) -> Self {
        self.buffer(v.as_bytes())
    }
    pub(super) fn into_bytes(self) -> Vec<u8> {
        self.0
    }
    /// `vector<ACL>` of one entry: `world:anyone` with every permission
    /// (`ZooDefs.Ids.OPEN_ACL_UNSAFE`, Curator's default).
    pub(super) fn open_acl(self) -> Self {
        self.int(1).int(31).string("world").string("anyone")
    }
}

/// A jute record being read; every read fails on a short record.
pub(super) struct In<'a>(&'a [u8]);

impl<'a> In<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        In(bytes)
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    pub(super) fn int(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    pub(super) fn long(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }
    pub(super) fn buffer(&mut self) -> Option<&'a [u8]> {
        let len = self.int()?;
        match usize::try_from(len) {
            Ok(len) => self.take(len),
            Err(_) => Some(&[]), // -1: null
        }
    }
    pub(super) fn string(&mut self) -> Option<String> {
        Some(String::from_utf8_lossy(self.buffer()?).into_owned())
    }
    /// `Stat`: its `czxid` and `ephemeralOwner`.
    pub(super) fn stat(&mut self) -> Option<(i64, i64)> {
        let czxid = self.long()?;
        self.long()?; // mzxid
        self.long()?; // ctime
        self.long()?; // mtime
        self.int()?; // version
        self.int()?; // cversion
        self.int()?; // aversion
        let owner = self.long()?;
        Some((czxid, owner))
    }
}

/// `ConnectResponse`.
#[derive(Clone, Debug)]
pub(super) struct Connected {
    pub timeout_ms: i32,
    pub session: i64,
    pub password: Vec<u8>,
}

/// What a socket hears besides answers to its calls.
#[derive(Debug)]
pub(super) enum Heard {
    /// The `ConnectResponse`.
    Connected(Connected),
    /// A ping's answer, after this many watch events on the socket.
    Pong { events: u64 },
    /// `NodeDeleted` of `path`, the socket's `n`th watch event.
    Deleted { path: String, n: u64 },
    /// The socket is gone (closed by the server, reset, unreadable).
    Closed,
}

type Answer = oneshot::Sender<(i32, Vec<u8>)>;
/// A frame to write, and who waits for its answer (by xid).
type Outgoing = (Vec<u8>, Option<(i32, Answer)>);

/// One socket to the server: frames written in call order by one task,
/// read by another.
pub(super) struct Socket {
    writer: mpsc::UnboundedSender<Outgoing>,
    next_xid: Mutex<i32>,
    tasks: [tokio::task::JoinHandle<()>; 2],
}

impl Drop for Socket {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&u32::try_from(body.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(body);
    out
}

impl Socket {
    /// Connects to `address`, sends `connect` (a `ConnectRequest`), and
    /// reports what it hears on `heard`; `last_zxid` is raised to every
    /// reply's zxid.
    pub(super) async fn open(
        address: &str,
        connect: Vec<u8>,
        heard: mpsc::UnboundedSender<Heard>,
        last_zxid: Arc<Mutex<i64>>,
    ) -> std::io::Result<Socket> {
        let stream = TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        let (mut read, mut write) = stream.into_split();
        let pending: Arc<Mutex<BTreeMap<i32, Answer>>> = Arc::default();
        let (writer, mut outgoing) = mpsc::unbounded_channel::<Outgoing>();
        let waiting = Arc::clone(&pending);
        let write_task = tokio::spawn(async move {
            while let Some((bytes, answer)) = outgoing.recv().await {
                if let (Some((xid, answer)), Ok(mut map)) = (answer, waiting.lock()) {
                    map.insert(xid, answer);
                }
                if write.write_all(&bytes).await.is_err() {
                    break;
                }
            }
        });
        let _ = writer.send((frame(&connect), None));
        let read_task = tokio::spawn(async move {
            let _ = read_frames(&mut read, &heard, &pending, &last_zxid).await;
            if let Ok(mut map) = pending.lock() {
                map.clear();
            }
            let _ = heard.send(Heard::Closed);
        });
        Ok(Socket {
            writer,
            next_xid: Mutex::new(1),
            tasks: [write_task, read_task],
        })
    }

    /// Sends request `op` with `body`; the answer's error code and body, or
    /// `None` if the socket went first.
    pub(super) async fn call(&self, op: i32, body: Out) -> Option<(i32, Vec<u8>)> {
        let xid = {
            let mut next = self.next_xid.lock().ok()?;
            let xid = *next;
            *next = next.wrapping_add(1).max(1);
            xid
        };
        let (answer, answered) = oneshot::channel();
        let request = Out::default().int(xid).int(op);
        let mut bytes = request.0;
        bytes.extend_from_slice(&body.0);
        self.writer
            .send((frame(&bytes), Some((xid, answer))))
            .ok()?;
        answered.await.ok()
    }

    /// Sends a ping (its answer is [`Heard::Pong`]).
    pub(super) fn ping(&self) {
        let bytes = Out::default().int(PING_XID).int(op::PING).0;
        let _ = self.writer.send((frame(&bytes), None));
    }
}

async fn read_frame(read: &mut tokio::net::tcp::OwnedReadHalf) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    read.read_exact(&mut len).await.ok()?;
    let len = usize::try_from(u32::from_be_bytes(len)).ok()?;
    if len > MAX_FRAME {
        return None;
    }
    let mut body = vec![0u8; len];
    read.read_exact(&mut body).await.ok()?;
    Some(body)
}

async fn read_frames(
    read: &mut tokio::net::tcp::OwnedReadHalf,
    heard: &mpsc::UnboundedSender<Heard>,
    pending: &Mutex<BTreeMap<i32, Answer>>,
    last_zxid: &Mutex<i64>,
) -> Option<()> {
    let first = read_frame(read).await?;
    let mut record = In::new(&first);
    record.int()?; // protocolVersion
    let timeout_ms = record.int()?;
    let session = record.long()?;
    let password = record.buffer()?.to_vec();
    heard
        .send(Heard::Connected(Connected {
            timeout_ms,
            session,
            password,
        }))
        .ok()?;
    let mut events = 0_u64;
    loop {
        let bytes = read_frame(read).await?;
        let mut record = In::new(&bytes);
        let xid = record.int()?;
        let zxid = record.long()?;
        let err = record.int()?;
        if zxid > 0 {
            if let Ok(mut last) = last_zxid.lock() {
                *last = (*last).max(zxid);
            }
        }
        match xid {
            PING_XID => {
                heard.send(Heard::Pong { events }).ok()?;
            }
            NOTIFICATION_XID => {
                let kind = record.int()?;
                record.int()?; // state
                let path = record.string()?;
                if kind == NODE_DELETED {
                    events += 1;
                    heard.send(Heard::Deleted { path, n: events }).ok()?;
                }
            }
            xid => {
                let answer = pending.lock().ok()?.remove(&xid);
                if let Some(answer) = answer {
                    let body = bytes.get(16..).unwrap_or_default().to_vec();
                    let _ = answer.send((err, body));
                }
            }
        }
    }
}

/// The sequence number of a sequential node's name (`…-0000000042`): its
/// last ten characters, as Curator's `LockInternals` sorts them.
pub(super) fn sequence_of(name: &str) -> Option<u64> {
    let digits = name.get(name.len().checked_sub(10)?..)?;
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_and_sequences_parse() {
        // Proves the encoder and decoder agree on jute's layout, and that
        // a protected sequential name reads as its sequence.
        let bytes = Out::default()
            .int(-7)
            .long(1 << 40)
            .string("/a")
            .buffer(b"xy")
            .0;
        let mut record = In::new(&bytes);
        assert_eq!(record.int(), Some(-7));
        assert_eq!(record.long(), Some(1 << 40));
        assert_eq!(record.string().as_deref(), Some("/a"));
        assert_eq!(record.buffer(), Some(&b"xy"[..]));
        assert_eq!(record.int(), None);
        assert_eq!(
            sequence_of("_c_00000000000000ff-latch-0000000042"),
            Some(42)
        );
        assert_eq!(sequence_of("latch-"), None);
    }
}
