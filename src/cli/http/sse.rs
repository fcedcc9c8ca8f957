//! Response bodies: whole JSON, and server-sent event streams fed by an
//! exchange's frames, with a comment line now and then so proxies keep the
//! stream open and a client that went away is noticed by the failed write.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::endpoint::{Exchange, Frame, Listening};
use bytes::Bytes;
use http_body::{Body, Frame as BodyFrame};
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;

/// How often an idle stream gets a comment line.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

pub type ResponseBody = BoxBody<Bytes, Infallible>;

pub fn full(bytes: impl Into<Bytes>) -> ResponseBody {
    http_body_util::Full::new(bytes.into()).boxed()
}

pub fn empty() -> ResponseBody {
    http_body_util::Empty::new().boxed()
}

/// One SSE event carrying a JSON-RPC message.
pub fn event(json: &str) -> Bytes {
    Bytes::from(format!("event: message\ndata: {json}\n\n"))
}

/// Something that yields an exchange's frames: an [`Exchange`] or a
/// session's GET stream.
pub trait Frames: Send + Sync + Unpin + 'static {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Frame>>;
}

impl Frames for Exchange {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Frame>> {
        self.frames.poll_recv(cx)
    }
}

impl Frames for Listening {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Frame>> {
        self.frames.poll_recv(cx)
    }
}

/// An SSE stream of `source`'s frames, ending after the `Last` one or when
/// the sender is gone. `source` and `guard` live as long as the stream:
/// dropping an [`Exchange`] early (the client went away) cancels its call.
pub fn stream(source: impl Frames, guard: impl Send + Sync + Unpin + 'static) -> ResponseBody {
    let mut keepalive = tokio::time::interval(KEEPALIVE);
    keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    keepalive.reset();
    Events {
        source,
        keepalive,
        ended: false,
        _guard: guard,
    }
    .boxed()
}

struct Events<S, G> {
    source: S,
    keepalive: tokio::time::Interval,
    ended: bool,
    _guard: G,
}

impl<S: Frames, G: Unpin> Body for Events<S, G> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Infallible>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match self.source.poll_frame(cx) {
            Poll::Ready(Some(Frame::Message(json))) => Poll::Ready(Some(Ok(BodyFrame::data(event(&json))))),
            Poll::Ready(Some(Frame::Last(json))) => {
                self.ended = true;
                Poll::Ready(Some(Ok(BodyFrame::data(event(&json)))))
            }
            Poll::Ready(None) => {
                self.ended = true;
                Poll::Ready(None)
            }
            Poll::Pending => match self.keepalive.poll_tick(cx) {
                Poll::Ready(_) => Poll::Ready(Some(Ok(BodyFrame::data(Bytes::from_static(b": keepalive\n\n"))))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}
