//! Where the crate's tables live: a validated schema name and table prefix.

use std::fmt;

/// PostgreSQL truncates identifiers longer than this many bytes
/// (`NAMEDATALEN - 1`); a truncated name could silently collide with another.
const MAX_IDENTIFIER_LEN: usize = 63;

/// The longest name the crate appends to the prefix (see [`Namespace::table`]).
/// Keep in step with the suffixes used by the schema module.
pub(crate) const LONGEST_SUFFIX: &str = "lease_tokens_no_truncate";

/// Why a schema name or table prefix was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceError {
    /// The schema name is empty.
    EmptySchema,
    /// A character other than lowercase ASCII letters, digits and `_`, or a
    /// leading digit. Such names would need quoting rules the crate does not
    /// want to get wrong, so they are refused rather than escaped.
    InvalidCharacter {
        /// `"schema"` or `"table prefix"`.
        what: &'static str,
        /// The name as given.
        name: String,
    },
    /// The schema name starts with `pg_`, which PostgreSQL reserves.
    ReservedSchema {
        /// The name as given.
        name: String,
    },
    /// The name (for the prefix: the prefix plus the longest table name the
    /// crate appends) is longer than PostgreSQL's 63-byte identifiers.
    TooLong {
        /// `"schema"` or `"table prefix"`.
        what: &'static str,
        /// The name as given.
        name: String,
        /// The most bytes allowed for it.
        max: usize,
    },
}

impl fmt::Display for NamespaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NamespaceError::EmptySchema => f.write_str("the schema name must not be empty"),
            NamespaceError::InvalidCharacter { what, name } => write!(
                f,
                "{what} {name:?} may only use lowercase ASCII letters, digits and '_', \
                 and must not start with a digit"
            ),
            NamespaceError::ReservedSchema { name } => write!(
                f,
                "schema {name:?} starts with 'pg_', which PostgreSQL reserves"
            ),
            NamespaceError::TooLong { what, name, max } => {
                write!(f, "{what} {name:?} is longer than {max} bytes")
            }
        }
    }
}

impl std::error::Error for NamespaceError {}

/// The schema and table-name prefix of the crate's tables and functions.
///
/// Both are validated once, here: lowercase ASCII letters, digits and `_`,
/// not starting with a digit, within PostgreSQL's 63-byte identifiers. They
/// are then always double-quoted in SQL. Nothing else the caller supplies is
/// ever put into SQL text: roles, owners, nodes, resources and payloads travel
/// as bind parameters.
///
/// The default is schema `fenced` with no prefix: tables `fenced.leases`,
/// `fenced.lease_tokens`, and so on. Two namespaces are fully independent
/// stores, which is how tests isolate themselves.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Namespace {
    schema: String,
    prefix: String,
}

impl Default for Namespace {
    fn default() -> Self {
        Namespace {
            schema: "fenced".to_owned(),
            prefix: String::new(),
        }
    }
}

fn check_characters(what: &'static str, name: &str) -> Result<(), NamespaceError> {
    let valid_chars = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    let leading_digit = name.bytes().next().is_some_and(|b| b.is_ascii_digit());
    if !valid_chars || leading_digit {
        return Err(NamespaceError::InvalidCharacter {
            what,
            name: name.to_owned(),
        });
    }
    Ok(())
}

impl Namespace {
    /// Tables in `schema`, each name starting with `prefix` (which may be
    /// empty). The schema is created by
    /// [`PostgresStore::migrate`](super::PostgresStore::migrate) if missing.
    ///
    /// # Errors
    /// [`NamespaceError`] if either name is not a plain lowercase identifier,
    /// the schema is empty or starts with `pg_`, or a resulting name would
    /// exceed 63 bytes.
    pub fn new(schema: &str, prefix: &str) -> Result<Namespace, NamespaceError> {
        if schema.is_empty() {
            return Err(NamespaceError::EmptySchema);
        }
        check_characters("schema", schema)?;
        check_characters("table prefix", prefix)?;
        if schema.starts_with("pg_") {
            return Err(NamespaceError::ReservedSchema {
                name: schema.to_owned(),
            });
        }
        if schema.len() > MAX_IDENTIFIER_LEN {
            return Err(NamespaceError::TooLong {
                what: "schema",
                name: schema.to_owned(),
                max: MAX_IDENTIFIER_LEN,
            });
        }
        let max_prefix = MAX_IDENTIFIER_LEN - LONGEST_SUFFIX.len();
        if prefix.len() > max_prefix {
            return Err(NamespaceError::TooLong {
                what: "table prefix",
                name: prefix.to_owned(),
                max: max_prefix,
            });
        }
        Ok(Namespace {
            schema: schema.to_owned(),
            prefix: prefix.to_owned(),
        })
    }

    /// The schema name.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The table prefix (possibly empty).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The quoted schema, for SQL: `"fenced"`.
    pub(crate) fn quoted_schema(&self) -> String {
        format!("\"{}\"", self.schema)
    }

    /// The bare (unqualified, quoted) name of the object `suffix`, for the
    /// names PostgreSQL does not schema-qualify (triggers, indexes).
    pub(crate) fn local(&self, suffix: &str) -> String {
        debug_assert!(suffix.len() <= LONGEST_SUFFIX.len());
        format!("\"{}{suffix}\"", self.prefix)
    }

    /// The schema-qualified, quoted name of the table or function `suffix`:
    /// `"fenced"."leases"`.
    pub(crate) fn table(&self, suffix: &str) -> String {
        format!("{}.{}", self.quoted_schema(), self.local(suffix))
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}*", self.schema, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lowercase_names_are_accepted_and_quoted() {
        let ns = Namespace::new("app_1", "fenced_").unwrap();
        assert_eq!(ns.table("leases"), "\"app_1\".\"fenced_leases\"");
        assert_eq!(ns.local("nodes"), "\"fenced_nodes\"");
        assert_eq!(
            Namespace::default().table("leases"),
            "\"fenced\".\"leases\""
        );
    }

    #[test]
    fn anything_that_would_need_escaping_is_refused() {
        for bad in ["Fenced", "a-b", "a b", "a\"b", "a;drop", "1abc", "é", "a.b"] {
            assert!(
                matches!(
                    Namespace::new(bad, ""),
                    Err(NamespaceError::InvalidCharacter { .. })
                ),
                "{bad}"
            );
            assert!(Namespace::new("ok", bad).is_err(), "{bad}");
        }
        assert_eq!(Namespace::new("", ""), Err(NamespaceError::EmptySchema));
        assert!(matches!(
            Namespace::new("pg_temp", ""),
            Err(NamespaceError::ReservedSchema { .. })
        ));
    }

    #[test]
    fn names_postgres_would_truncate_are_refused() {
        let long = "a".repeat(MAX_IDENTIFIER_LEN + 1);
        assert!(matches!(
            Namespace::new(&long, ""),
            Err(NamespaceError::TooLong { what: "schema", .. })
        ));
        let max_prefix = "p".repeat(MAX_IDENTIFIER_LEN - LONGEST_SUFFIX.len());
        let ns = Namespace::new("s", &max_prefix).unwrap();
        assert_eq!(ns.local(LONGEST_SUFFIX).len(), MAX_IDENTIFIER_LEN + 2);
        let too_long = format!("{max_prefix}p");
        let err = Namespace::new("s", &too_long).unwrap_err();
        assert!(err.to_string().contains("longer than"), "{err}");
    }
}
