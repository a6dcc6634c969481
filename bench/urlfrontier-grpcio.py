"""One Python grpcio client of the URLFrontier bench (bench/urlfrontier.ts, issue 44 "Speed").

Usage: python3 urlfrontier-grpcio.py PB_DIR PORT put|get URLS_FILE CRAWL [BATCH]

put: every URL of URLS_FILE on one PutDiscovered stream, BATCH (default 1,000) URLs per
DiscoveredBatch, timed from the first batch sent to the last ack. get: GetURLs of CRAWL, one URL
per queue, until it answers nothing. Prints one JSON object: urls, seconds and per status counts.
The messages are compiled from the shipped .proto by protoc into PB_DIR beforehand; calls go by
method path, as a client without generated stubs makes them.
"""
import json
import sys
import time

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
import urlfrontier_pb2 as pb  # noqa: E402

SERVICE = "/urlfrontier.URLFrontier/"
MESSAGE_BYTES_MAX = 64 * 1024 * 1024


def put(channel, urls, crawl, batch):
    call = channel.stream_stream(SERVICE + "PutDiscovered", request_serializer=pb.DiscoveredBatch.SerializeToString, response_deserializer=pb.BatchAck.FromString)

    def batches():
        for start in range(0, len(urls), batch):
            items = [pb.URLInfo(url=url, crawlID=crawl) for url in urls[start:start + batch]]
            yield pb.DiscoveredBatch(ID=str(start), items=items)

    statuses = {"OK": 0, "SKIPPED": 0, "FAIL": 0}
    started = time.perf_counter()
    for ack in call(batches()):
        for status in ack.statuses:
            statuses[pb.AckMessage.Status.Name(status)] += 1
    return {"urls": len(urls), "seconds": time.perf_counter() - started, **statuses}


def get(channel, crawl):
    call = channel.unary_stream(SERVICE + "GetURLs", request_serializer=pb.GetParams.SerializeToString, response_deserializer=pb.URLInfo.FromString)
    handed = 0
    calls = 0
    started = time.perf_counter()
    while True:
        got = sum(1 for _ in call(pb.GetParams(crawlID=crawl, max_urls_per_queue=1, delay_requestable=600)))
        calls += 1
        if got == 0:
            break
        handed += got
    return {"urls": handed, "seconds": time.perf_counter() - started, "calls": calls}


def main():
    port, mode, path, crawl = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
    batch = int(sys.argv[6]) if len(sys.argv) > 6 else 1000
    options = [("grpc.max_receive_message_length", MESSAGE_BYTES_MAX), ("grpc.max_send_message_length", MESSAGE_BYTES_MAX)]
    with grpc.insecure_channel("127.0.0.1:" + port, options=options) as channel:
        if mode == "put":
            with open(path, encoding="utf-8") as f:
                urls = [line.rstrip("\n") for line in f if line.strip()]
            result = put(channel, urls, crawl, batch)
        else:
            result = get(channel, crawl)
    print(json.dumps(result))


main()
