"""Which subscriptions share one execution, and what a shared subscriber that falls behind gets."""

from types import SimpleNamespace

from server import websocket
from server.websocket import MAX_SHARED_BACKLOG, _Listener, share_key

ANON = SimpleNamespace(principal=None, key_presented=False)
LIVE = "subscription { runPublished { cursor run { digest } } }"


def test_live_public_subscriptions_share_by_document_variables_and_caller():
    assert share_key(LIVE, None, None, ANON) == share_key(LIVE, {}, None, ANON)
    with_filter = "subscription($f: RunPublishedFilter) { runPublished(filter: $f) { cursor } }"
    assert share_key(with_filter, {"f": {"gpu": "A"}}, None, ANON) != share_key(with_filter, {"f": {"gpu": "B"}}, None, ANON)
    someone = SimpleNamespace(principal=SimpleNamespace(id="k1"), key_presented=True)
    assert share_key(LIVE, None, None, someone) != share_key(LIVE, None, None, ANON)
    group = "subscription($id: ID!) { comparisonGroupChanged(id: $id, after: null) { size } }"
    assert share_key(group, {"id": "x"}, None, ANON) is not None
    resuming_later = "subscription($a: String) { runPublished(after: $a) { cursor } }"
    assert share_key(resuming_later, {"a": None}, None, ANON) is not None


def test_resuming_private_or_unusual_subscriptions_run_on_their_own():
    assert share_key('subscription { runPublished(after: "MQ==") { cursor } }', None, None, ANON) is None
    assert share_key("subscription($a: String) { runPublished(after: $a) { cursor } }", {"a": "MQ=="}, None, ANON) is None
    assert share_key('subscription { benchmarkJobUpdated(id: "x") { state } }', None, None, ANON) is None
    assert share_key("subscription { ...F } fragment F on Subscription { runPublished { cursor } }", None, None, ANON) is None
    assert share_key("subscription { runPublished { cursor", None, None, ANON) is None  # syntax: strawberry answers
    assert share_key("query { runs { edges { cursor } } }", None, None, ANON) is None
    assert share_key(LIVE, "not a dict", None, ANON) is None
    two = LIVE + " subscription B { runPublished { cursor } }"
    assert share_key(two, None, None, ANON) is None
    assert (
        share_key("subscription A { runPublished { cursor } }" + " subscription B { runPublished { cursor } }", None, "B", ANON) is not None
    )


async def test_a_shared_subscriber_that_falls_behind_is_dropped_with_a_code():
    listener = _Listener()
    for i in range(MAX_SHARED_BACKLOG):
        assert listener.offer(("next", str(i)))
    assert not listener.offer(("next", "one too many"))
    kind, errors = await listener.get()
    assert kind == "error" and errors[0]["extensions"]["code"] == "SLOW_CONSUMER"
    assert listener.queue.empty() and not listener.offer(("next", "later"))
    assert websocket.SHAREABLE_FIELDS == {"runPublished", "comparisonGroupChanged"}
