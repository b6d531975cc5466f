//! A real etcd (`fenced_lab::servers::etcd`), driven through the
//! `etcd-client` crate the nodes will use: what the etcd model's
//! `client/v3/concurrency` election needs — a lease granted, kept alive and
//! revoked, a `Txn` on a key's create revision, a watch, and the Election
//! service — a three-member cluster that survives a member's crash, and
//! nothing left behind after a stop, a failed start and a SIGKILLed owner.

mod support;

use std::net::{Ipv4Addr, TcpListener};
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, EventType, PutOptions, Txn, TxnOp, WatchOptions,
};
use fenced_lab::servers::etcd::{self, EtcdCluster, EtcdOptions};
use fenced_lab::servers::ServerError;

fn installed(test: &str) -> bool {
    support::zoo_server(test, etcd::program("etcd"))
}

async fn connect(endpoints: Vec<String>) -> Client {
    let options = ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(2))
        .with_timeout(Duration::from_secs(5));
    Client::connect(endpoints, Some(options))
        .await
        .expect("connects")
}

/// The election's campaign as `concurrency/election.go` writes it: put the
/// candidate's key (prefix + lease id) only if it does not exist
/// (create revision 0), with its lease; its create revision orders the
/// candidates (and is the model's fencing token).
async fn campaign_key(client: &mut Client, key: &str, lease: i64) -> (bool, i64) {
    let txn = Txn::new()
        .when([Compare::create_revision(key, CompareOp::Equal, 0)])
        .and_then([TxnOp::put(
            key,
            "candidate",
            Some(PutOptions::new().with_lease(lease)),
        )])
        .or_else([TxnOp::get(key, None)]);
    let response = client.txn(txn).await.expect("txn");
    let succeeded = response.succeeded();
    let read = client.get(key, None).await.expect("get");
    let revision = read.kvs().first().map_or(0, |kv| kv.create_revision());
    (succeeded, revision)
}

#[tokio::test]
async fn one_member_serves_leases_txns_watches_and_elections() {
    if !installed("one_member_serves_leases_txns_watches_and_elections") {
        return;
    }
    let base = tempfile::tempdir().expect("tempdir");
    let mut cluster = EtcdCluster::start(base.path(), "etcd", &EtcdOptions::default())
        .await
        .expect("starts");
    let pid = cluster.member_mut(0).and_then(|m| m.pid()).expect("runs");
    let data = cluster.members()[0].data_dir().to_path_buf();
    let mut client = connect(cluster.endpoints()).await;

    // A lease, kept alive once (the model's keep-alive at TTL/3).
    let lease = client.lease_grant(5, None).await.expect("grant");
    assert_eq!(lease.ttl(), 5);
    let (mut keeper, mut answers) = client
        .lease_keep_alive(lease.id())
        .await
        .expect("keep-alive");
    keeper.keep_alive().await.expect("sends a keep-alive");
    let answer = answers
        .message()
        .await
        .expect("reads a keep-alive answer")
        .expect("an answer");
    assert_eq!(answer.id(), lease.id());
    assert!(answer.ttl() > 0 && answer.ttl() <= 5, "{}", answer.ttl());

    // Campaign keys: the first wins on create revision 0, the second's
    // create revision is larger.
    let (first, first_revision) = campaign_key(&mut client, "election/a", lease.id()).await;
    assert!(first);
    let (again, same_revision) = campaign_key(&mut client, "election/a", lease.id()).await;
    assert!(!again, "a key that exists is not created again");
    assert_eq!(same_revision, first_revision);
    let other = client.lease_grant(5, None).await.expect("grant");
    let (second, second_revision) = campaign_key(&mut client, "election/b", other.id()).await;
    assert!(second);
    assert!(second_revision > first_revision);

    // A watch on the prefix sees the revoke delete the first key (the
    // second candidate's wait for its predecessor).
    let mut events = client
        .watch("election/", Some(WatchOptions::new().with_prefix()))
        .await
        .expect("watch");
    client.lease_revoke(lease.id()).await.expect("revoke");
    let deleted = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(response) = events.message().await.expect("watch stream") {
            for event in response.events() {
                if event.event_type() == EventType::Delete {
                    return event.kv().map(|kv| kv.key().to_vec());
                }
            }
        }
        None
    })
    .await
    .expect("a delete within 5 s");
    assert_eq!(deleted.as_deref(), Some(&b"election/a"[..]));

    // The Election service (v3electionpb), on the second lease.
    let campaign = client
        .campaign("service", "node-b", other.id())
        .await
        .expect("campaign");
    let leader_key = campaign.leader().expect("a leader key").clone();
    let leader = client.leader("service").await.expect("leader");
    assert_eq!(
        leader.kv().map(|kv| kv.value().to_vec()).as_deref(),
        Some(&b"node-b"[..])
    );
    client
        .resign(Some(
            etcd_client::ResignOptions::new().with_leader(leader_key),
        ))
        .await
        .expect("resign");

    drop((client, events));
    cluster.stop().await;
    support::assert_nothing_left("etcd after stop", &[pid], &data);
}

#[tokio::test]
async fn three_members_serve_through_one_members_crash_and_restart() {
    if !installed("three_members_serve_through_one_members_crash") {
        return;
    }
    let base = tempfile::tempdir().expect("tempdir");
    let options = EtcdOptions {
        members: 3,
        ..EtcdOptions::default()
    };
    let mut cluster = EtcdCluster::start(base.path(), "etcd", &options)
        .await
        .expect("three start");
    let endpoints = cluster.endpoints();
    assert_eq!(endpoints.len(), 3);
    let mut pids = Vec::new();
    for i in 0..3 {
        pids.push(cluster.member_mut(i).and_then(|m| m.pid()).expect("runs"));
    }
    let mut client = connect(endpoints[1..].to_vec()).await;
    client.put("k", "before", None).await.expect("put");
    cluster.kill(0).await;
    // A put a follower forwarded to the dead leader is dropped and times out
    // (etcd does not propose it again): the client's request timeout (5 s)
    // ends it, and the next put reaches the new leader.
    let mut attempts = 0;
    while let Err(error) = client.put("k", "during", None).await {
        attempts += 1;
        assert!(
            attempts < 5,
            "no quorum of two after {attempts} puts: {error}"
        );
    }
    cluster.restart(0).await.expect("rejoins");
    let mut rejoined = connect(endpoints[..1].to_vec()).await;
    let read = rejoined.get("k", None).await.expect("linearizable read");
    assert_eq!(
        read.kvs().first().map(|kv| kv.value().to_vec()).as_deref(),
        Some(&b"during"[..])
    );
    pids.push(cluster.member_mut(0).and_then(|m| m.pid()).expect("runs"));
    let dirs: Vec<_> = cluster
        .members()
        .iter()
        .map(|m| m.data_dir().to_path_buf())
        .collect();
    drop((client, rejoined));
    cluster.stop().await;
    for dir in dirs {
        support::assert_nothing_left("etcd cluster after stop", &pids, &dir);
    }
}

#[tokio::test]
async fn a_failed_start_names_the_member_and_leaves_nothing() {
    if !installed("a_failed_start_names_the_member") {
        return;
    }
    let base = tempfile::tempdir().expect("tempdir");
    let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binds");
    let port = taken.local_addr().expect("address").port();
    let options = EtcdOptions {
        client_port: Some(port),
        ..EtcdOptions::default()
    };
    let error = EtcdCluster::start(base.path(), "taken", &options)
        .await
        .expect_err("the port is taken");
    let text = error.to_string();
    assert!(matches!(error, ServerError::Exited { .. }), "{text}");
    assert!(text.contains("taken-0"), "{text}");
    assert!(text.contains("etcd --name taken-0"), "{text}");
    assert!(error.is_port_clash(), "{text}");
    support::assert_nothing_left(
        "etcd on a taken port",
        &[],
        &base.path().join("taken-0.data"),
    );

    let options = EtcdOptions {
        extra_args: vec!["--no-such-flag".into()],
        ..EtcdOptions::default()
    };
    let error = EtcdCluster::start(base.path(), "bad", &options)
        .await
        .expect_err("a bad flag");
    let text = error.to_string();
    assert!(text.contains("bad-0"), "{text}");
    assert!(
        text.contains("flag provided but not defined: -no-such-flag"),
        "the cause is quoted from the log: {text}"
    );
    support::assert_nothing_left("etcd with a bad flag", &[], &base.path().join("bad-0.data"));

    let options = EtcdOptions {
        members: 2,
        ..EtcdOptions::default()
    };
    let error = EtcdCluster::start(base.path(), "two", &options)
        .await
        .expect_err("1 or 3 members");
    assert!(matches!(error, ServerError::Unsupported { .. }), "{error}");
}

#[tokio::test]
async fn members_die_with_a_sigkilled_owner() {
    if !installed("members_die_with_a_sigkilled_owner") {
        return;
    }
    let base = tempfile::tempdir().expect("tempdir");
    support::servers_die_with_their_owner("etcd", 3, base.path()).await;
}
