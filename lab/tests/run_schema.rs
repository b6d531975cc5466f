//! The run's schema: created fresh, never another's, always dropped.

mod support;

use fenced_lab::schema::RunSchema;

#[tokio::test(flavor = "current_thread")]
async fn the_run_never_touches_a_schema_it_did_not_create() {
    // A schema with the run's first candidate name already exists (a stale
    // run's, a user's): the run takes the next name, and leaves it alone.
    let Some(url) = support::database_url("run_schema") else {
        return;
    };
    let prefix = format!("fenced_lab_{}_", std::process::id());
    let foreign = format!("{prefix}0");
    let admin = fenced_lab::schema::connect(&url).await.expect("connects");
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS \"{foreign}\" CASCADE; CREATE SCHEMA \"{foreign}\"; \
             CREATE TABLE \"{foreign}\".precious (x int)"
        ))
        .await
        .expect("a foreign schema");
    let schema = RunSchema::create(&url).await.expect("created");
    assert_eq!(schema.name(), format!("{prefix}1"));
    schema.drop_schema().await.expect("dropped");
    assert_eq!(
        support::schemas_like(&url, &prefix).await,
        vec![foreign.as_str()]
    );

    // A run that fails or panics before dropping it: the guard drops it.
    let abandoned = RunSchema::create(&url).await.expect("created");
    assert_eq!(abandoned.name(), format!("{prefix}1"));
    drop(abandoned);
    assert_eq!(
        support::schemas_like(&url, &prefix).await,
        vec![foreign.as_str()]
    );

    admin
        .batch_execute(&format!("DROP SCHEMA \"{foreign}\" CASCADE"))
        .await
        .expect("cleanup");
}
