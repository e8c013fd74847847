"""notify.Hub: a publish from any thread wakes the handlers and the asyncio waiters of its channel
and key (a key of None wakes the whole channel); a finished watch is forgotten."""

from __future__ import annotations

import asyncio
import threading

from inferprep import notify


def test_publish_calls_the_channels_handlers_with_the_key_as_text():
    hub = notify.Hub()
    heard: list[tuple[str, str | None]] = []
    hub.on(notify.JOBS, lambda key: heard.append(("jobs", key)))
    hub.on(notify.CANCEL, lambda key: heard.append(("cancel", key)))
    hub.publish(notify.CANCEL, 7)
    hub.publish(notify.JOBS)
    assert heard == [("cancel", "7"), ("jobs", None)]


def test_a_broken_handler_does_not_silence_the_others():
    hub = notify.Hub()
    heard = []

    def broken(_key):
        raise RuntimeError("boom")
    hub.on(notify.JOBS, broken)
    hub.on(notify.JOBS, heard.append)
    hub.publish(notify.JOBS, 1)
    assert heard == ["1"]


def test_off_unregisters_a_handler():
    hub = notify.Hub()
    heard = []
    hub.on(notify.JOBS, heard.append)
    hub.off(notify.JOBS, heard.append)
    hub.publish(notify.JOBS, 1)
    assert heard == []


def test_a_publish_from_another_thread_wakes_only_the_watchers_of_its_key():
    hub = notify.Hub()

    async def main():
        with hub.watch(notify.SUBMISSION, 1) as mine, hub.watch(notify.SUBMISSION, 2) as other:
            t = threading.Thread(target=hub.publish, args=(notify.SUBMISSION, 1))
            t.start()
            await asyncio.wait_for(mine.wait(), 10)
            t.join()
            await asyncio.sleep(0)            # let any other scheduled wake-up run
            return other.is_set()

    assert asyncio.run(main()) is False


def test_a_publish_without_a_key_wakes_every_watcher_of_the_channel():
    hub = notify.Hub()

    async def main():
        with hub.watch(notify.SUBMISSION, 1) as a, hub.watch(notify.SUBMISSION, 2) as b, \
                hub.watch(notify.JOBS, 1) as elsewhere:
            hub.publish(notify.SUBMISSION, None)
            await asyncio.wait_for(a.wait(), 10)
            await asyncio.wait_for(b.wait(), 10)
            return elsewhere.is_set()

    assert asyncio.run(main()) is False


def test_a_publish_before_the_wait_is_not_lost():
    """The stream registers, reads, then waits: a change between the read and the wait still wakes it."""
    hub = notify.Hub()

    async def main():
        with hub.watch(notify.SUBMISSION, 3) as changed:
            hub.publish(notify.SUBMISSION, 3)     # "between the read and the wait"
            await asyncio.sleep(0)
            await asyncio.wait_for(changed.wait(), 10)
            return True

    assert asyncio.run(main())


def test_a_finished_watch_is_forgotten():
    hub = notify.Hub()

    async def main():
        with hub.watch(notify.SUBMISSION, 4):
            pass

    asyncio.run(main())
    assert not hub._waiters
    hub.publish(notify.SUBMISSION, 4)       # nobody left to wake, and nothing raises


def test_poll_seconds_is_slow_where_notifications_reach_the_waiter():
    assert notify.poll_seconds("postgresql+psycopg://u@h/db", same_process=False) == notify.SAFETY_POLL_S
    assert notify.poll_seconds("sqlite:///x.db", same_process=True) == notify.SAFETY_POLL_S
    assert notify.poll_seconds("sqlite:///x.db", same_process=False) == notify.SQLITE_POLL_S
