-- A resume under way holds its pause "being resumed" only while it runs (docs/cli.md, "Pausing shipping").
--
-- 008 marked a pause `releasing_at` when `fulfilment shipping resume --rate` began waking its orders, and only that
-- command ended it: killed part-way and never run again, it left the pause being resumed for ever — shipments went
-- out, but the workers' resumers never woke the orders it still held, and no new pause of that scope could be taken.
-- Here the command holds the release as a lease, renewed each round:
--
-- * `releasing_until`: the lease's end (the store's clock). A pause being resumed whose lease ran out is ended by the
--   first worker that reads the pauses after that (src/store/pause-releases.ts, every 2 s), which records why; the
--   workers' resumers then wake what it still held, at their own pace.
-- * NULL for a pause not being resumed, and for one marked by a build before this one (which ended it itself).

ALTER TABLE shipping_pauses ADD COLUMN releasing_until timestamptz;
