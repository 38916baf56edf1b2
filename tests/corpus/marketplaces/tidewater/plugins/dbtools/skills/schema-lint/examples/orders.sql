CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id bigint, total_cents integer NOT NULL);
CREATE TABLE order_line_items_with_a_rather_long_descriptive_name (id bigserial PRIMARY KEY, order_id bigint, sku text);
ALTER TABLE orders ADD COLUMN currency text NOT NULL DEFAULT 'EUR';
