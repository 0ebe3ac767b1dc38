#!/usr/bin/env python3
"""A TCP proxy that adds a fixed delay each way, so a loopback server looks like one a round trip
away (there is no netem in this kernel). Bytes keep their order; throughput is not limited.

usage: latency-proxy.py LISTEN_PORT TARGET_PORT ROUND_TRIP_MS
"""
import asyncio
import sys


async def pump(reader, writer, delay):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def deliver():
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                break
            writer.write(data)
            await writer.drain()
        try:
            writer.write_eof()
        except OSError:
            pass

    sender = asyncio.create_task(deliver())
    try:
        while True:
            data = await reader.read(256 * 1024)
            await queue.put((loop.time() + delay, data or None))
            if not data:
                break
    except ConnectionError:
        await queue.put((loop.time(), None))
    try:
        await sender
    except ConnectionError:
        pass


async def main():
    listen_port, target_port, round_trip_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    one_way = round_trip_ms / 2000

    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pump(client_reader, server_writer, one_way), pump(server_reader, client_writer, one_way),
            return_exceptions=True)
        for writer in (client_writer, server_writer):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", listen_port, backlog=512)
    async with server:
        await server.serve_forever()


asyncio.run(main())
