//! Identities and fencing tokens.
//!
//! Every identity is a validated newtype over a shared string: cloning one is a
//! reference-count increment, never an allocation, so the hot paths of the
//! simulator can pass them around freely. Validation happens once, where the
//! string enters the type ("parse, don't validate"): an empty or oversized name
//! is an [`IdError`] at construction, so no state machine ever sees one.

use std::borrow::Borrow;
use std::fmt;
use std::num::NonZeroU64;
use std::str::FromStr;
use std::sync::Arc;

/// The longest identity accepted, in bytes. Long enough for a host name plus a
/// UUID incarnation suffix; short enough to keep traces and keys readable.
pub const MAX_ID_LEN: usize = 255;

/// Why a string is not a valid identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdError {
    /// The string is empty.
    Empty {
        /// Which kind of identity was being built (`"role"`, `"owner"`, ...).
        kind: &'static str,
    },
    /// The string is longer than [`MAX_ID_LEN`] bytes.
    TooLong {
        /// Which kind of identity was being built.
        kind: &'static str,
        /// The string's length in bytes.
        len: usize,
    },
    /// The string contains a control character (newline, tab, NUL, ...), which
    /// would corrupt line-oriented traces and logs.
    ControlCharacter {
        /// Which kind of identity was being built.
        kind: &'static str,
    },
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdError::Empty { kind } => write!(f, "{kind} must not be empty"),
            IdError::TooLong { kind, len } => {
                write!(
                    f,
                    "{kind} is {len} bytes long; at most {MAX_ID_LEN} are allowed"
                )
            }
            IdError::ControlCharacter { kind } => {
                write!(f, "{kind} must not contain control characters")
            }
        }
    }
}

impl std::error::Error for IdError {}

fn validate(kind: &'static str, s: &str) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty { kind });
    }
    if s.len() > MAX_ID_LEN {
        return Err(IdError::TooLong { kind, len: s.len() });
    }
    if s.chars().any(char::is_control) {
        return Err(IdError::ControlCharacter { kind });
    }
    Ok(())
}

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialOrd, Ord)]
        #[cfg_attr(
            feature = "serde",
            derive(serde::Serialize, serde::Deserialize),
            serde(try_from = "String", into = "String")
        )]
        pub struct $name(Arc<str>);

        impl PartialEq for $name {
            /// Equal text. Clones of one identity share their allocation, so
            /// the common case is a pointer comparison.
            #[inline]
            fn eq(&self, other: &Self) -> bool {
                Arc::ptr_eq(&self.0, &other.0) || *self.0 == *other.0
            }
        }

        impl Eq for $name {}

        impl std::hash::Hash for $name {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.0.hash(state);
            }
        }

        impl $name {
            /// Validates `name` and wraps it.
            ///
            /// # Errors
            /// [`IdError`] if `name` is empty, longer than [`MAX_ID_LEN`] bytes,
            /// or contains a control character.
            pub fn new(name: impl AsRef<str>) -> Result<Self, IdError> {
                let name = name.as_ref();
                validate($kind, name)?;
                Ok(Self(Arc::from(name)))
            }

            /// The identity as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), &*self.0)
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                Self::new(s)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = IdError;
            fn try_from(s: &str) -> Result<Self, IdError> {
                Self::new(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                Self::new(s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0.to_string()
            }
        }
    };
}

string_id!(
    /// The name of a singleton job whose leadership is leased, e.g. `"reports"`.
    /// Leases, tokens and electors are all per role.
    Role,
    "role"
);

string_id!(
    /// Who holds (or asks for) a lease: one *life* of one process.
    ///
    /// A process that crashes and restarts must come back as a new owner
    /// (append an incarnation or a UUID to the host name), or two lives of one
    /// node could share a fencing token.
    OwnerId,
    "owner"
);

string_id!(
    /// A cluster member as the [`NodeRegistry`](crate::NodeRegistry) knows it:
    /// a stable machine or pod name, the same across restarts.
    NodeId,
    "node"
);

string_id!(
    /// A resource in the fenced downstream store, e.g. a table or a file name.
    ResourceId,
    "resource"
);

/// A fencing token: the number of a leadership term of one role.
///
/// The lease store hands out tokens 1, 2, 3, ... per role: each new term gets
/// one more than the highest the role ever had, so a higher token always means
/// a later term. Downstream systems compare tokens to reject writes from
/// superseded leaders. Zero is never a token, so `Option<FencingToken>` costs
/// nothing extra.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
pub struct FencingToken(NonZeroU64);

impl FencingToken {
    /// The first token a role ever gets.
    pub const FIRST: FencingToken = FencingToken(NonZeroU64::MIN);

    /// The token numbered `n`, or `None` for zero (never a token).
    pub const fn new(n: u64) -> Option<FencingToken> {
        match NonZeroU64::new(n) {
            Some(n) => Some(FencingToken(n)),
            None => None,
        }
    }

    /// The token's number (at least 1).
    pub const fn get(self) -> u64 {
        self.0.get()
    }

    /// The next term's token, or `None` after `u64::MAX` terms.
    pub const fn next(self) -> Option<FencingToken> {
        match self.0.checked_add(1) {
            Some(n) => Some(FencingToken(n)),
            None => None,
        }
    }
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FencingToken({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_identities_are_rejected_with_their_kind() {
        assert_eq!(Role::new(""), Err(IdError::Empty { kind: "role" }));
        assert_eq!(OwnerId::new(""), Err(IdError::Empty { kind: "owner" }));
        assert_eq!(NodeId::new(""), Err(IdError::Empty { kind: "node" }));
        assert_eq!(
            ResourceId::new(""),
            Err(IdError::Empty { kind: "resource" })
        );
        assert_eq!(
            Role::new("").unwrap_err().to_string(),
            "role must not be empty"
        );
    }

    #[test]
    fn oversized_and_control_character_identities_are_rejected() {
        let long = "x".repeat(MAX_ID_LEN + 1);
        assert_eq!(
            OwnerId::new(&long),
            Err(IdError::TooLong {
                kind: "owner",
                len: MAX_ID_LEN + 1
            })
        );
        assert!(OwnerId::new("x".repeat(MAX_ID_LEN)).is_ok());
        assert_eq!(
            Role::new("a\nb"),
            Err(IdError::ControlCharacter { kind: "role" })
        );
    }

    #[test]
    fn identities_order_and_compare_by_their_text() {
        let a = NodeId::new("node-a").unwrap();
        let b: NodeId = "node-b".parse().unwrap();
        assert!(a < b);
        assert_eq!(a, NodeId::new(String::from("node-a")).unwrap());
        assert_eq!(a.to_string(), "node-a");
        assert_eq!(format!("{a:?}"), "NodeId(\"node-a\")");
    }

    #[test]
    fn tokens_start_at_one_and_count_up() {
        assert_eq!(FencingToken::FIRST.get(), 1);
        assert_eq!(FencingToken::new(0), None);
        assert_eq!(FencingToken::FIRST.next().map(FencingToken::get), Some(2));
        assert_eq!(
            FencingToken::new(u64::MAX).and_then(FencingToken::next),
            None
        );
        assert_eq!(std::mem::size_of::<Option<FencingToken>>(), 8);
        let seven = FencingToken::new(7).unwrap();
        assert_eq!(seven.to_string(), "7");
        assert_eq!(format!("{seven:?}"), "FencingToken(7)");
    }

    #[test]
    fn errors_say_what_is_wrong_with_which_identity() {
        let long = "x".repeat(MAX_ID_LEN + 1);
        assert_eq!(
            OwnerId::new(&long).unwrap_err().to_string(),
            format!(
                "owner is {} bytes long; at most {MAX_ID_LEN} are allowed",
                MAX_ID_LEN + 1
            )
        );
        assert_eq!(
            Role::new("a\tb").unwrap_err().to_string(),
            "role must not contain control characters"
        );
    }

    #[cfg(feature = "serde")]
    #[test]
    fn serde_round_trips_and_rejects_invalid_identities() {
        let role: Role = serde_json::from_str("\"reports\"").unwrap();
        assert_eq!(serde_json::to_string(&role).unwrap(), "\"reports\"");
        assert!(serde_json::from_str::<Role>("\"\"").is_err());
        let token: FencingToken = serde_json::from_str("7").unwrap();
        assert_eq!(token.get(), 7);
        assert!(serde_json::from_str::<FencingToken>("0").is_err());
    }
}
