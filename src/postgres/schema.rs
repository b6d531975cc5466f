//! The schema (version 3) and every SQL statement the crate sends.
//!
//! All SQL text is built here, once per store, from templates whose only
//! substitutions are the validated, quoted names of a [`Namespace`]. Values
//! (roles, owners, tokens, TTLs, payloads, the test clock) are always bind
//! parameters.
//!
//! The lease, registry and fenced-write logic runs in PL/pgSQL functions the
//! migration creates: each call is **one statement**, hence one atomic
//! transaction, and one round trip. A function rather than a single CTE
//! statement because of how PostgreSQL reads under `READ COMMITTED`: all parts
//! of one statement share the snapshot taken when it started, so a statement
//! that waited for a row lock would decide on a lease row read *before* the
//! wait. Inside a function each statement takes a fresh snapshot, so the
//! lease row is read after the role's lock is held. The functions refuse to
//! run under any other isolation level.

use super::namespace::Namespace;

/// The schema version this crate creates and understands.
/// Version 1 made the tables and functions; version 2 numbers the fenced
/// table's decisions (the `fenced_decisions` sequence and
/// `fenced_write_ordered`), so a history can put them in the database's
/// order; version 3 has a release answer with the database clock at its
/// decision (`release_dated`), so a history can put releases among grants
/// and renewals in the store's order. An older schema is migrated in place:
/// its objects are left as they are (re-running the idempotent earlier
/// scripts changes nothing), and `fenced_write` and `release` keep their
/// signatures and answers, so an older client still works on it.
pub(crate) const SCHEMA_VERSION: i32 = 3;

/// Key of the advisory lock that serializes migrations (of any namespace) in
/// one database. An arbitrary constant; another application taking the same
/// advisory lock would only delay a migration, never break it.
pub(crate) const MIGRATION_LOCK_KEY: i64 = 0x5f1f_2c64_9a4b_7d03;

/// Every object name the crate creates, as the suffix after the prefix.
/// [`super::namespace::LONGEST_SUFFIX`] must be the longest of them.
#[cfg(test)]
const OBJECT_SUFFIXES: &[&str] = &[
    "schema_version",
    "lease_tokens",
    "leases",
    "nodes",
    "nodes_expires_at",
    "fenced_resources",
    "require_read_committed",
    "lock_role",
    "acquire_or_renew",
    "release",
    "release_dated",
    "heartbeat",
    "fenced_write",
    "fenced_write_ordered",
    "fenced_decisions",
    "lease_tokens_guard",
    "lease_tokens_no_delete",
    "lease_tokens_no_truncate",
    "lease_tokens_no_lowering",
];

/// The migration to version 1. Idempotent on its own (`IF NOT EXISTS`,
/// `CREATE OR REPLACE`, drop-then-create for triggers), and run under the
/// migration lock in one transaction, so concurrent migrations are safe.
const MIGRATION_V1: &str = r#"
CREATE SCHEMA IF NOT EXISTS {schema};

CREATE TABLE IF NOT EXISTS {schema_version} (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version     integer NOT NULL,
    migrated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- One fencing-token counter per role ever granted. Logged (never UNLOGGED),
-- never deleted and never lowered (the triggers below refuse), so neither a
-- crash nor a deleted lease row can send a role's tokens backwards.
-- latest_now is the role's clock high-water mark: the store's time never runs
-- backwards for a role, as in the pure LeaseStore.
CREATE TABLE IF NOT EXISTS {lease_tokens} (
    role       text COLLATE "C" PRIMARY KEY,
    highest    bigint NOT NULL DEFAULT 0 CHECK (highest >= 0),
    latest_now timestamptz
);

-- The current (possibly expired) lease of each role; no row when free.
CREATE TABLE IF NOT EXISTS {leases} (
    role       text COLLATE "C" PRIMARY KEY,
    owner      text COLLATE "C" NOT NULL,
    token      bigint NOT NULL CHECK (token >= 1),
    granted_at timestamptz NOT NULL,
    renewed_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);

-- Node registry: a node is live while the database clock is before expires_at.
CREATE TABLE IF NOT EXISTS {nodes} (
    node           text COLLATE "C" PRIMARY KEY,
    joined_at      timestamptz NOT NULL,
    last_heartbeat timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS {nodes_expires_at_local} ON {nodes} (expires_at);

-- The fenced downstream table: per resource, the highest token accepted, the
-- writer that token is bound to, and the last accepted payload.
CREATE TABLE IF NOT EXISTS {fenced_resources} (
    resource      text COLLATE "C" PRIMARY KEY,
    highest       bigint NOT NULL CHECK (highest >= 1),
    writer        text COLLATE "C" NOT NULL,
    payload       bytea NOT NULL,
    accepted      bigint NOT NULL,
    last_write_at timestamptz NOT NULL
);

CREATE OR REPLACE FUNCTION {lease_tokens_guard}() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    RAISE EXCEPTION 'fenced: fencing-token counters are never deleted or lowered (% on %.%)',
        TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END
$fn$;
DROP TRIGGER IF EXISTS {lease_tokens_no_delete_local} ON {lease_tokens};
CREATE TRIGGER {lease_tokens_no_delete_local} BEFORE DELETE ON {lease_tokens}
    FOR EACH ROW EXECUTE FUNCTION {lease_tokens_guard}();
DROP TRIGGER IF EXISTS {lease_tokens_no_truncate_local} ON {lease_tokens};
CREATE TRIGGER {lease_tokens_no_truncate_local} BEFORE TRUNCATE ON {lease_tokens}
    FOR EACH STATEMENT EXECUTE FUNCTION {lease_tokens_guard}();
DROP TRIGGER IF EXISTS {lease_tokens_no_lowering_local} ON {lease_tokens};
CREATE TRIGGER {lease_tokens_no_lowering_local} BEFORE UPDATE ON {lease_tokens}
    FOR EACH ROW WHEN (NEW.highest < OLD.highest OR NEW.role <> OLD.role)
    EXECUTE FUNCTION {lease_tokens_guard}();

-- Under READ COMMITTED each statement of a function sees what committed
-- before it started, so a lease row read after taking the role's lock is
-- current. Other levels would answer from an older snapshot (or fail).
CREATE OR REPLACE FUNCTION {require_read_committed}() RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'fenced: needs READ COMMITTED isolation, not %',
            current_setting('transaction_isolation')
            USING ERRCODE = 'invalid_transaction_state';
    END IF;
END
$fn$;

-- Locks the token-counter row of a role, creating it on first use. Every
-- change to a role's lease happens behind this lock.
CREATE OR REPLACE FUNCTION {lock_role}(p_role text,
    OUT o_highest bigint, OUT o_latest_now timestamptz)
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM {require_read_committed}();
    SELECT t.highest, t.latest_now INTO o_highest, o_latest_now
        FROM {lease_tokens} t WHERE t.role = p_role FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO {lease_tokens} (role) VALUES (p_role) ON CONFLICT (role) DO NOTHING;
        SELECT t.highest, t.latest_now INTO o_highest, o_latest_now
            FROM {lease_tokens} t WHERE t.role = p_role FOR UPDATE;
    END IF;
END
$fn$;

-- The pure LeaseStore::try_acquire_or_renew, on the database clock.
-- p_now is NULL in production (the clock is clock_timestamp(), read after the
-- role's lock is held); only a test's manual clock passes an instant.
CREATE OR REPLACE FUNCTION {acquire_or_renew}(
    p_role text, p_owner text, p_ttl_us bigint, p_now timestamptz,
    OUT o_outcome text, OUT o_holder text, OUT o_token bigint, OUT o_expires_at timestamptz)
LANGUAGE plpgsql AS $fn$
DECLARE
    v_highest    bigint;
    v_latest     timestamptz;
    v_now        timestamptz;
    v_owner      text;
    v_token      bigint;
    v_expires_at timestamptz;
BEGIN
    -- 1. Serialize every change to this role behind its counter row.
    SELECT r.o_highest, r.o_latest_now INTO v_highest, v_latest FROM {lock_role}(p_role) r;
    -- 2. Only now read the clock: clock_timestamp(), not now(), which is the
    --    transaction's start and may lie before a long lock wait. The role's
    --    time never runs backwards.
    v_now := greatest(coalesce(p_now, clock_timestamp()), v_latest);
    SELECT l.owner, l.token, l.expires_at INTO v_owner, v_token, v_expires_at
        FROM {leases} l WHERE l.role = p_role;
    IF FOUND AND v_now < v_expires_at THEN
        IF v_owner = p_owner THEN
            -- 3a. The caller's live lease: renewed, token unchanged.
            o_outcome := 'renewed';
            o_expires_at := v_now + p_ttl_us * interval '1 microsecond';
            UPDATE {leases} l SET renewed_at = v_now, expires_at = o_expires_at
                WHERE l.role = p_role;
        ELSE
            -- 3b. Someone else's live lease: refused, naming the holder.
            o_outcome := 'held';
            o_expires_at := v_expires_at;
        END IF;
        o_holder := v_owner;
        o_token := v_token;
    ELSIF v_highest = 9223372036854775807 THEN
        -- 3c. Refused as bad input, like the pure store: nothing changes.
        o_outcome := 'exhausted';
        RETURN;
    ELSE
        -- 3d. Free, released or expired (now >= expires_at): a new term with
        --     a token above every earlier one, even for the same owner.
        v_highest := v_highest + 1;
        o_outcome := 'granted';
        o_holder := p_owner;
        o_token := v_highest;
        o_expires_at := v_now + p_ttl_us * interval '1 microsecond';
        INSERT INTO {leases} AS l (role, owner, token, granted_at, renewed_at, expires_at)
            VALUES (p_role, p_owner, v_highest, v_now, v_now, o_expires_at)
            ON CONFLICT (role) DO UPDATE SET owner = EXCLUDED.owner, token = EXCLUDED.token,
                granted_at = EXCLUDED.granted_at, renewed_at = EXCLUDED.renewed_at,
                expires_at = EXCLUDED.expires_at;
    END IF;
    -- 4. The counter and the role's clock, in the same transaction.
    UPDATE {lease_tokens} t SET highest = v_highest, latest_now = v_now
        WHERE t.role = p_role
          AND (t.highest <> v_highest OR t.latest_now IS DISTINCT FROM v_now);
END
$fn$;

-- The pure LeaseStore::release: frees the lease only for its live holder with
-- that token; a late release of an older term changes nothing.
CREATE OR REPLACE FUNCTION {release}(
    p_role text, p_owner text, p_token bigint, p_now timestamptz)
RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
    v_latest   timestamptz;
    v_now      timestamptz;
    v_released boolean;
BEGIN
    SELECT r.o_latest_now INTO v_latest FROM {lock_role}(p_role) r;
    v_now := greatest(coalesce(p_now, clock_timestamp()), v_latest);
    DELETE FROM {leases} l
        WHERE l.role = p_role AND l.owner = p_owner AND l.token = p_token
          AND v_now < l.expires_at;
    v_released := FOUND;
    UPDATE {lease_tokens} t SET latest_now = v_now
        WHERE t.role = p_role AND t.latest_now IS DISTINCT FROM v_now;
    RETURN v_released;
END
$fn$;

-- The pure NodeRegistry::heartbeat: true when the node joined (was not live).
-- Also prunes nodes expired at this clock, skipping rows locked by their own
-- heartbeat (so two heartbeats never wait on each other).
CREATE OR REPLACE FUNCTION {heartbeat}(p_node text, p_ttl_us bigint, p_now timestamptz)
RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
    v_last       timestamptz;
    v_expires_at timestamptz;
    v_now        timestamptz;
    v_joined     boolean;
BEGIN
    PERFORM {require_read_committed}();
    SELECT n.last_heartbeat, n.expires_at INTO v_last, v_expires_at
        FROM {nodes} n WHERE n.node = p_node FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO {nodes} (node, joined_at, last_heartbeat, expires_at)
            VALUES (p_node, '-infinity', '-infinity', '-infinity')
            ON CONFLICT (node) DO NOTHING;
        SELECT n.last_heartbeat, n.expires_at INTO v_last, v_expires_at
            FROM {nodes} n WHERE n.node = p_node FOR UPDATE;
    END IF;
    v_now := greatest(coalesce(p_now, clock_timestamp()), v_last);
    v_joined := v_now >= v_expires_at;
    UPDATE {nodes} n SET last_heartbeat = v_now,
            expires_at = v_now + p_ttl_us * interval '1 microsecond',
            joined_at = CASE WHEN v_joined THEN v_now ELSE n.joined_at END
        WHERE n.node = p_node;
    DELETE FROM {nodes} n WHERE n.node IN (
        SELECT e.node FROM {nodes} e
            WHERE e.expires_at <= v_now AND e.node <> p_node
            FOR UPDATE SKIP LOCKED);
    RETURN v_joined;
END
$fn$;

-- fenced_write (the fenced table's fence): see version 2.
"#;

/// The migration from version 1 to 2 (run after the version-1 script, in
/// the same transaction): the fence's function with a decision number, and
/// `fenced_write`, with version 1's signature and answers, calling it.
const MIGRATION_V2: &str = r#"
-- The fenced table's decisions, numbered in the order the database made
-- them. A sequence is not transactional (a rolled-back write leaves a gap):
-- the numbers order decisions, they do not count them.
CREATE SEQUENCE IF NOT EXISTS {fenced_decisions} AS bigint;

-- The pure FencedStore::write (fencing enforced), and the decision's
-- number. The fence is the upsert's WHERE: the token comparison and the
-- write are one statement, so no concurrent writer can slip between them. A
-- rejected upsert still locks the row, so the report below reads the very
-- row it was compared with. The number is drawn after the
-- upsert, while the transaction holds the resource row's lock (an accepted
-- and a rejected upsert both lock it, and a first insert holds the key):
-- the next decision on the resource waits for this transaction to end, so
-- on each resource the numbers follow the order of the decisions.
CREATE OR REPLACE FUNCTION {fenced_write_ordered}(
    p_resource text, p_token bigint, p_writer text, p_payload bytea, p_now timestamptz,
    OUT o_outcome text, OUT o_highest bigint, OUT o_writer text, OUT o_decision bigint)
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM {require_read_committed}();
    INSERT INTO {fenced_resources} AS f
            (resource, highest, writer, payload, accepted, last_write_at)
        VALUES (p_resource, p_token, p_writer, p_payload, 1,
                coalesce(p_now, clock_timestamp()))
        ON CONFLICT (resource) DO UPDATE SET
            highest = EXCLUDED.highest, writer = EXCLUDED.writer,
            payload = EXCLUDED.payload, accepted = f.accepted + 1,
            last_write_at = greatest(f.last_write_at, EXCLUDED.last_write_at)
        WHERE EXCLUDED.highest > f.highest
           OR (EXCLUDED.highest = f.highest AND EXCLUDED.writer = f.writer);
    IF FOUND THEN
        o_outcome := 'accepted';
        o_highest := p_token;
        o_writer := p_writer;
    ELSE
        SELECT CASE WHEN p_token < f.highest THEN 'stale' ELSE 'wrong_writer' END,
               f.highest, f.writer
            INTO o_outcome, o_highest, o_writer
            FROM {fenced_resources} f WHERE f.resource = p_resource;
    END IF;
    o_decision := nextval('{fenced_decisions}');
END
$fn$;

-- Version 1's entry point, for version-1 clients: the same fence, without
-- the number (same signature and answers, so CREATE OR REPLACE keeps it).
CREATE OR REPLACE FUNCTION {fenced_write}(
    p_resource text, p_token bigint, p_writer text, p_payload bytea, p_now timestamptz,
    OUT o_outcome text, OUT o_highest bigint, OUT o_writer text)
LANGUAGE sql AS $fn$
    SELECT w.o_outcome, w.o_highest, w.o_writer
        FROM {fenced_write_ordered}(p_resource, p_token, p_writer, p_payload, p_now) w
$fn$;
"#;

/// The migration from version 2 to 3 (run after the version-1 and -2
/// scripts, in the same transaction): the release with the database clock at
/// its decision, and `release`, with version 1's signature and answer,
/// calling it.
const MIGRATION_V3: &str = r#"
-- The pure LeaseStore::release, and the role's clock at the decision (read
-- behind the role's lock, never behind the role's latest decision: the same
-- clock that dates grants and renewals, so a release takes its place among
-- them in the store's own order).
CREATE OR REPLACE FUNCTION {release_dated}(
    p_role text, p_owner text, p_token bigint, p_now timestamptz,
    OUT o_released boolean, OUT o_now timestamptz)
LANGUAGE plpgsql AS $fn$
DECLARE
    v_latest timestamptz;
BEGIN
    SELECT r.o_latest_now INTO v_latest FROM {lock_role}(p_role) r;
    o_now := greatest(coalesce(p_now, clock_timestamp()), v_latest);
    DELETE FROM {leases} l
        WHERE l.role = p_role AND l.owner = p_owner AND l.token = p_token
          AND o_now < l.expires_at;
    o_released := FOUND;
    UPDATE {lease_tokens} t SET latest_now = o_now
        WHERE t.role = p_role AND t.latest_now IS DISTINCT FROM o_now;
END
$fn$;

-- Version 1's entry point, for older clients: the same release, without the
-- clock (same signature and answer, so CREATE OR REPLACE keeps it).
CREATE OR REPLACE FUNCTION {release}(
    p_role text, p_owner text, p_token bigint, p_now timestamptz)
RETURNS boolean
LANGUAGE sql AS $fn$
    SELECT r.o_released FROM {release_dated}(p_role, p_owner, p_token, p_now) r
$fn$;
"#;

const READ_VERSION: &str = "SELECT v.version FROM {schema_version} v";
const WRITE_VERSION: &str = "INSERT INTO {schema_version} AS v (singleton, version) \
     VALUES (true, $1) ON CONFLICT (singleton) DO UPDATE \
     SET version = EXCLUDED.version, migrated_at = clock_timestamp()";
const ACQUIRE_OR_RENEW: &str = "SELECT a.o_outcome, a.o_holder, a.o_token, a.o_expires_at \
     FROM {acquire_or_renew}($1, $2, $3, $4) a";
const RELEASE: &str = "SELECT r.o_released, r.o_now FROM {release_dated}($1, $2, $3, $4) r";
/// `holder` and `live_nodes` read the clock once, in a materialized CTE: a
/// volatile call in a WHERE clause would be evaluated per row.
const HOLDER: &str =
    "WITH c AS MATERIALIZED (SELECT coalesce($2::timestamptz, clock_timestamp()) AS now) \
     SELECT l.owner, l.token, l.expires_at \
     FROM {leases} l JOIN {lease_tokens} t ON t.role = l.role CROSS JOIN c \
     WHERE l.role = $1 AND greatest(c.now, t.latest_now) < l.expires_at";
const HIGHEST_TOKEN: &str = "SELECT t.highest FROM {lease_tokens} t WHERE t.role = $1";
const HEARTBEAT: &str = "SELECT {heartbeat}($1, $2, $3)";
const LIVE_NODES: &str =
    "WITH c AS MATERIALIZED (SELECT coalesce($1::timestamptz, clock_timestamp()) AS now) \
     SELECT n.node FROM {nodes} n CROSS JOIN c WHERE c.now < n.expires_at ORDER BY n.node";
const FENCED_WRITE: &str = "SELECT w.o_outcome, w.o_highest, w.o_writer, w.o_decision \
     FROM {fenced_write_ordered}($1, $2, $3, $4, $5) w";
const FENCED_READ: &str = "SELECT f.highest, f.writer, f.payload, f.accepted, f.last_write_at \
     FROM {fenced_resources} f WHERE f.resource = $1";

/// The SQL text of one namespace.
#[derive(Clone, Debug)]
pub(crate) struct Sql {
    /// The migration to this version: the version-1 script, then version
    /// 2's and 3's (no parameters; idempotent, so it also completes an older
    /// schema).
    pub(crate) migration: String,
    /// The version table's qualified name, as a `to_regclass` argument.
    pub(crate) version_table: String,
    pub(crate) read_version: String,
    pub(crate) write_version: String,
    pub(crate) acquire_or_renew: String,
    pub(crate) release: String,
    pub(crate) holder: String,
    pub(crate) highest_token: String,
    pub(crate) heartbeat: String,
    pub(crate) live_nodes: String,
    pub(crate) fenced_write: String,
    pub(crate) fenced_read: String,
}

/// Replaces every `{name}` of `template` with the qualified name of the
/// object `name` (`{name_local}`: its unqualified name; `{schema}`: the
/// schema). Nothing else is ever substituted.
fn render(template: &str, namespace: &Namespace) -> String {
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .expect("every '{' in a SQL template closes a name");
        let name = &after[..close];
        assert!(
            name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "a SQL template placeholder is a plain name: {name:?}"
        );
        if name == "schema" {
            out.push_str(&namespace.quoted_schema());
        } else if let Some(local) = name.strip_suffix("_local") {
            out.push_str(&namespace.local(local));
        } else {
            out.push_str(&namespace.table(name));
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

impl Sql {
    pub(crate) fn new(namespace: &Namespace) -> Sql {
        Sql {
            migration: render(
                &format!("{MIGRATION_V1}{MIGRATION_V2}{MIGRATION_V3}"),
                namespace,
            ),
            version_table: namespace.table("schema_version"),
            read_version: render(READ_VERSION, namespace),
            write_version: render(WRITE_VERSION, namespace),
            acquire_or_renew: render(ACQUIRE_OR_RENEW, namespace),
            release: render(RELEASE, namespace),
            holder: render(HOLDER, namespace),
            highest_token: render(HIGHEST_TOKEN, namespace),
            heartbeat: render(HEARTBEAT, namespace),
            live_nodes: render(LIVE_NODES, namespace),
            fenced_write: render(FENCED_WRITE, namespace),
            fenced_read: render(FENCED_READ, namespace),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::namespace::LONGEST_SUFFIX;
    use super::*;

    #[test]
    fn templates_use_only_known_names_and_the_longest_suffix_is_right() {
        let longest = OBJECT_SUFFIXES.iter().map(|s| s.len()).max();
        assert_eq!(longest, Some(LONGEST_SUFFIX.len()));
        assert!(OBJECT_SUFFIXES.contains(&LONGEST_SUFFIX));
        let all = [
            MIGRATION_V1,
            MIGRATION_V2,
            MIGRATION_V3,
            READ_VERSION,
            WRITE_VERSION,
            ACQUIRE_OR_RENEW,
            RELEASE,
            HOLDER,
            HIGHEST_TOKEN,
            HEARTBEAT,
            LIVE_NODES,
            FENCED_WRITE,
            FENCED_READ,
        ];
        for template in all {
            let mut rest = template;
            while let Some(open) = rest.find('{') {
                let after = &rest[open + 1..];
                let close = after.find('}').expect("closed placeholder");
                let name = &after[..close];
                let name = name.strip_suffix("_local").unwrap_or(name);
                assert!(
                    name == "schema" || OBJECT_SUFFIXES.contains(&name),
                    "unknown object {name:?}"
                );
                rest = &after[close + 1..];
            }
        }
    }

    #[test]
    fn rendering_quotes_the_namespace_and_leaves_no_placeholder() {
        let ns = Namespace::new("app", "f_").unwrap();
        let sql = Sql::new(&ns);
        assert!(sql
            .migration
            .contains("CREATE SCHEMA IF NOT EXISTS \"app\";"));
        assert!(sql.migration.contains("\"app\".\"f_leases\""));
        assert!(sql
            .migration
            .contains("CREATE TRIGGER \"f_lease_tokens_no_delete\" BEFORE DELETE ON \"app\".\"f_lease_tokens\""));
        assert!(!sql.migration.contains('{'));
        assert!(!sql.acquire_or_renew.contains('{'));
        assert_eq!(
            sql.release,
            "SELECT r.o_released, r.o_now FROM \"app\".\"f_release_dated\"($1, $2, $3, $4) r"
        );
        let code: String = sql
            .migration
            .lines()
            .map(|line| line.split("--").next().unwrap_or(""))
            .collect();
        assert!(
            !code.contains("now()") && !code.contains("current_timestamp"),
            "the database clock is clock_timestamp(), never the transaction's start"
        );
    }
}
