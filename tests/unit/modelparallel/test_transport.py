"""The TCP mesh of the TensorFlow variant (common/transport.py), with no framework: three ranks
as threads of this process rendezvous, exchange objects on separate channels, and a rank whose
peer went away gets an error instead of waiting forever."""

import threading

import pytest
from smdistributed.modelparallel.common.transport import PeerLost, Transport

from .world import free_port

WORLD = 3


def mesh(size=WORLD, timeout=30.0):
    """Every rank's Transport, each set up in its own thread (the rendezvous blocks until all came)."""
    port, transports, errors = free_port(), [None] * size, []

    def join(rank):
        try:
            transports[rank] = Transport(rank, size, "127.0.0.1", port, timeout)
        except Exception as exc:  # reported below, with the rank
            errors.append((rank, exc))

    threads = [threading.Thread(target=join, args=(rank,)) for rank in range(size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors and all(transports), errors
    return transports


def test_every_pair_exchanges_objects_and_channels_do_not_mix():
    transports = mesh()
    try:
        for transport in transports:  # send everything first: a receiver never blocks a sender
            for peer in range(WORLD):
                if peer != transport.rank:
                    transport.send(peer, "b", ("b", transport.rank))
                    transport.send(peer, "a", {"from": transport.rank, "big": bytes(3 << 20)})
        for transport in transports:
            for peer in range(WORLD):
                if peer != transport.rank:
                    first = transport.receive(peer, "a")  # sent after "b", received first
                    assert first["from"] == peer and len(first["big"]) == 3 << 20
                    assert transport.receive(peer, "b") == ("b", peer)
    finally:
        for transport in transports:
            transport.close()


def test_a_peer_that_went_away_fails_the_waiting_receiver():
    transports = mesh(timeout=60.0)
    try:
        transports[2].close()
        with pytest.raises(PeerLost, match="rank 0: the connection to rank 2 closed"):
            transports[0].receive(2, "a")
        with pytest.raises(PeerLost, match="rank 1: the connection to rank 2 closed"):
            transports[1].receive(2, "a channel first used after the loss")
    finally:
        for transport in transports[:2]:
            transport.close()


def test_nothing_arriving_within_the_timeout_is_an_error():
    transports = mesh(size=2, timeout=0.2)
    try:
        with pytest.raises(TimeoutError, match="nothing arrived from rank 1 on 'a' within 0.2 s"):
            transports[0].receive(1, "a")
    finally:
        for transport in transports:
            transport.close()
