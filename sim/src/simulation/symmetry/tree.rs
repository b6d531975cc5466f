//! A run's state text (`simulation::fingerprint`, written with
//! `derive(Debug)`) read back as a tree, so that a renaming of nodes can be
//! applied field by field instead of by text substitution.
//!
//! The grammar is `derive(Debug)`'s: `Name { field: value, .. }` (a struct
//! or struct variant), `Name(value, ..)` (a tuple struct or variant, `Some`
//! included), `(value, ..)`, `[value, ..]`, `{key: value, ..}` (a map) or
//! `{value, ..}` (a set), quoted strings, and atoms (numbers, unit
//! variants, durations, `None`). The fingerprint's own lines put labels and
//! `:`/`;` between Debug values ("queue 10:Some(..);"); those are read as a
//! loose sequence of items, the punctuation kept as [`Item::Punct`].
//! Rendering a tree back gives a text that is not `Debug`'s but is
//! injective (every container bracketed, every string quoted as read):
//! two trees render equal exactly when they are equal.

use std::fmt;

/// One value of the state text.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Item {
    /// A number, a unit variant, a duration, `None`, a label.
    Atom(String),
    /// A quoted string, as written (quotes and escapes included).
    Str(String),
    /// `:` or `;` between the fingerprint's own items.
    Punct(char),
    /// `Name { field: value, .. }`.
    Struct(String, Vec<(String, Item)>),
    /// `Name(value, ..)`, or `(value, ..)` with an empty name.
    Tuple(String, Vec<Item>),
    /// `[value, ..]`.
    Seq(Vec<Item>),
    /// `{key: value, ..}`, or a set's `{value, ..}` (no values).
    Map(Vec<(Item, Option<Item>)>),
}

/// `Clone` by hand for its `clone_from`, which reuses the target's
/// buffers where the shapes match: a canonical form renames one tree dozens
/// of times, each into the same scratch copy (`symmetry::canonical`), and
/// `derive(Clone)`'s `clone_from` (a fresh clone) made allocation the
/// larger part of the search's time.
impl Clone for Item {
    fn clone(&self) -> Self {
        match self {
            Item::Atom(a) => Item::Atom(a.clone()),
            Item::Str(s) => Item::Str(s.clone()),
            Item::Punct(c) => Item::Punct(*c),
            Item::Struct(name, fields) => Item::Struct(name.clone(), fields.clone()),
            Item::Tuple(name, items) => Item::Tuple(name.clone(), items.clone()),
            Item::Seq(items) => Item::Seq(items.clone()),
            Item::Map(entries) => Item::Map(entries.clone()),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        match (self, source) {
            (Item::Atom(to), Item::Atom(from)) | (Item::Str(to), Item::Str(from)) => {
                to.clone_from(from);
            }
            (Item::Struct(name, fields), Item::Struct(from_name, from_fields)) => {
                name.clone_from(from_name);
                clone_vec_from(fields, from_fields, |(f, v), (g, w)| {
                    f.clone_from(g);
                    v.clone_from(w);
                });
            }
            (Item::Tuple(name, items), Item::Tuple(from_name, from_items)) => {
                name.clone_from(from_name);
                clone_vec_from(items, from_items, Item::clone_from);
            }
            (Item::Seq(items), Item::Seq(from_items)) => {
                clone_vec_from(items, from_items, Item::clone_from);
            }
            (Item::Map(entries), Item::Map(from_entries)) => {
                clone_vec_from(entries, from_entries, |(k, v), (l, w)| {
                    k.clone_from(l);
                    v.clone_from(w);
                });
            }
            (to, from) => *to = from.clone(),
        }
    }
}

/// `to.clone_from(from)` for a `Vec` whose elements' own `clone_from` is
/// `clone_one` (tuples' is a fresh clone).
pub(crate) fn clone_vec_from<T: Clone>(
    to: &mut Vec<T>,
    from: &[T],
    clone_one: impl Fn(&mut T, &T),
) {
    to.truncate(from.len());
    let kept = to.len();
    for (t, f) in to.iter_mut().zip(from) {
        clone_one(t, f);
    }
    to.extend_from_slice(&from[kept..]);
}

/// Why a state text could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ParseError {
    /// Byte offset of the problem.
    pub at: usize,
    /// What was expected.
    pub expected: &'static str,
}

/// Reads the whole state text as a loose sequence of items.
pub(crate) fn parse(text: &str) -> Result<Vec<Item>, ParseError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let items = p.list(None)?;
    if p.i != p.s.len() {
        return Err(p.error("the end of the text"));
    }
    Ok(items)
}

/// Renders items injectively (see the module documentation) into `out`:
/// a `String`, or the fingerprint's hasher, which keeps nothing.
pub(crate) fn render(items: &[Item], out: &mut dyn fmt::Write) -> fmt::Result {
    for item in items {
        render_item(item, out)?;
        out.write_char(' ')?;
    }
    Ok(())
}

fn render_item(item: &Item, out: &mut dyn fmt::Write) -> fmt::Result {
    match item {
        Item::Atom(a) | Item::Str(a) => out.write_str(a),
        Item::Punct(c) => out.write_char(*c),
        Item::Struct(name, fields) => {
            write!(out, "{name}{{")?;
            for (field, value) in fields {
                write!(out, "{field}:")?;
                render_item(value, out)?;
                out.write_char(',')?;
            }
            out.write_char('}')
        }
        Item::Tuple(name, items) => {
            out.write_str(name)?;
            render_list('(', items, ')', out)
        }
        Item::Seq(items) => render_list('[', items, ']', out),
        Item::Map(entries) => {
            out.write_char('{')?;
            for (k, v) in entries {
                render_item(k, out)?;
                if let Some(v) = v {
                    out.write_char(':')?;
                    render_item(v, out)?;
                }
                out.write_char(',')?;
            }
            out.write_char('}')
        }
    }
}

fn render_list(open: char, items: &[Item], close: char, out: &mut dyn fmt::Write) -> fmt::Result {
    out.write_char(open)?;
    for i in items {
        render_item(i, out)?;
        out.write_char(',')?;
    }
    out.write_char(close)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

const DELIMITERS: &[u8] = b" \t\n\r,:;()[]{}\"";

impl Parser<'_> {
    fn error(&self, expected: &'static str) -> ParseError {
        ParseError {
            at: self.i,
            expected,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn expect(&mut self, c: u8, what: &'static str) -> Result<(), ParseError> {
        self.skip_space();
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.error(what))
        }
    }

    /// Items up to `close` (or the end): separated by commas or spaces,
    /// with `:` and `;` kept as punctuation.
    fn list(&mut self, close: Option<u8>) -> Result<Vec<Item>, ParseError> {
        let mut items = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                None if close.is_none() => return Ok(items),
                None => return Err(self.error("a closing bracket")),
                Some(c) if Some(c) == close => {
                    self.i += 1;
                    return Ok(items);
                }
                Some(b',') => self.i += 1,
                Some(c @ (b':' | b';')) => {
                    self.i += 1;
                    items.push(Item::Punct(c as char));
                }
                Some(_) => items.push(self.value()?),
            }
        }
    }

    fn value(&mut self) -> Result<Item, ParseError> {
        self.skip_space();
        match self.peek() {
            Some(b'"') => self.string(),
            Some(b'[') => {
                self.i += 1;
                Ok(Item::Seq(self.list(Some(b']'))?))
            }
            Some(b'(') => {
                self.i += 1;
                Ok(Item::Tuple(String::new(), self.list(Some(b')'))?))
            }
            Some(b'{') => {
                self.i += 1;
                self.map()
            }
            Some(c) if !DELIMITERS.contains(&c) => {
                let start = self.i;
                while self.peek().is_some_and(|c| !DELIMITERS.contains(&c)) {
                    self.i += 1;
                }
                let atom = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                if self.peek() == Some(b'(') {
                    self.i += 1;
                    return Ok(Item::Tuple(atom, self.list(Some(b')'))?));
                }
                let named = atom.as_bytes()[0].is_ascii_uppercase();
                if named && self.s[self.i..].starts_with(b" {") {
                    self.i += 2;
                    return Ok(Item::Struct(atom, self.fields()?));
                }
                Ok(Item::Atom(atom))
            }
            _ => Err(self.error("a value")),
        }
    }

    fn string(&mut self) -> Result<Item, ParseError> {
        let start = self.i;
        self.i += 1;
        loop {
            match self.peek() {
                None => return Err(self.error("a closing quote")),
                Some(b'\\') => self.i += 2,
                Some(b'"') => {
                    self.i += 1;
                    let text = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                    return Ok(Item::Str(text));
                }
                Some(_) => self.i += 1,
            }
        }
    }

    /// A struct's `field: value, .. }` (the opening brace read).
    fn fields(&mut self) -> Result<Vec<(String, Item)>, ParseError> {
        let mut fields = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                Some(b'}') => {
                    self.i += 1;
                    return Ok(fields);
                }
                Some(b',') => self.i += 1,
                _ => {
                    let Item::Atom(name) = self.value()? else {
                        return Err(self.error("a field name"));
                    };
                    self.expect(b':', "a colon after a field name")?;
                    fields.push((name, self.value()?));
                }
            }
        }
    }

    /// A map's or set's entries (the opening brace read).
    fn map(&mut self) -> Result<Item, ParseError> {
        let mut entries = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Item::Map(entries));
                }
                Some(b',') => self.i += 1,
                _ => {
                    let key = self.value()?;
                    self.skip_space();
                    let value = if self.peek() == Some(b':') {
                        self.i += 1;
                        Some(self.value()?)
                    } else {
                        None
                    };
                    entries.push((key, value));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    #[allow(dead_code)]
    struct Row {
        id: String,
        at: Option<(u32, std::time::Duration)>,
        tags: std::collections::BTreeMap<String, Vec<u8>>,
        unit: (),
        kind: Kind,
    }

    #[derive(Debug)]
    #[allow(dead_code)]
    enum Kind {
        Leader { token: u64 },
        Wrapped(i64, bool),
        Follower,
    }

    fn row(kind: Kind) -> Row {
        Row {
            id: "node-\"a\"#1".into(),
            at: Some((3, std::time::Duration::from_millis(2700))),
            tags: [("b".to_string(), vec![1, 2]), ("a".into(), vec![])]
                .into_iter()
                .collect(),
            unit: (),
            kind,
        }
    }

    #[test]
    fn derive_debug_reads_back_into_its_structure() {
        let text = format!("label {:?}\nqueue 10:{:?};", row(Kind::Follower), Some(1));
        let items = parse(&text).expect("debug text parses");
        assert_eq!(items.len(), 7, "{items:?}");
        let Item::Struct(name, fields) = &items[1] else {
            panic!("{items:?}")
        };
        assert_eq!(name, "Row");
        let names: Vec<&str> = fields.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(names, ["id", "at", "tags", "unit", "kind"]);
        assert_eq!(fields[0].1, Item::Str(r##""node-\"a\"#1""##.into()));
        assert_eq!(
            fields[1].1,
            Item::Tuple(
                "Some".into(),
                vec![Item::Tuple(
                    String::new(),
                    vec![Item::Atom("3".into()), Item::Atom("2.7s".into())]
                )]
            )
        );
        assert!(matches!(&fields[2].1, Item::Map(e) if e.len() == 2));
        assert_eq!(items[3], Item::Atom("10".into()));
        assert_eq!(items[4], Item::Punct(':'));
    }

    #[test]
    fn rendering_tells_apart_what_debug_tells_apart() {
        let render_of = |kind| {
            let mut out = String::new();
            let items = parse(&format!("{:?}", row(kind))).expect("parses");
            render(&items, &mut out).expect("a String takes any text");
            out
        };
        let all = [
            render_of(Kind::Follower),
            render_of(Kind::Leader { token: 1 }),
            render_of(Kind::Leader { token: 11 }),
            render_of(Kind::Wrapped(-1, true)),
            render_of(Kind::Wrapped(-1, false)),
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn a_malformed_text_is_an_error_not_a_panic() {
        for bad in ["Row { id: ", "[1, 2", "\"open", "Row { 1 }", "{a: }"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
